/**
 * TApplicationException: the struct thrift answers a call with when the call itself failed (an
 * EXCEPTION message: `1: string message`, `2: i32 type`). The proxy encodes its own failures this
 * way and reads an upstream's to classify and log it.
 */
import { MessageType, type MessageHeader, type ThriftProtocolName } from './message.js';
import { ThriftReader, ThriftWriter, TType } from './struct-codec.js';

/** TApplicationException's `type` values. */
export const AppExceptionType = {
  UNKNOWN: 0,
  UNKNOWN_METHOD: 1,
  INVALID_MESSAGE_TYPE: 2,
  WRONG_METHOD_NAME: 3,
  BAD_SEQUENCE_ID: 4,
  MISSING_RESULT: 5,
  INTERNAL_ERROR: 6,
  PROTOCOL_ERROR: 7,
  INVALID_TRANSFORM: 8,
  INVALID_PROTOCOL: 9,
  UNSUPPORTED_CLIENT_TYPE: 10,
} as const;

export interface AppException {
  readonly message: string;
  readonly type: number;
}

/** An EXCEPTION message answering call `name`/`seqid` with a TApplicationException. */
export function encodeAppException(proto: ThriftProtocolName, name: string, seqid: number, e: AppException): Buffer {
  return new ThriftWriter(proto)
    .messageBegin(name, MessageType.EXCEPTION, seqid)
    .field(TType.STRING, 1)
    .string(e.message)
    .field(TType.I32, 2)
    .i32(e.type)
    .stop()
    .toBuffer();
}

/** The TApplicationException of an EXCEPTION message `msg` whose header is `h`. */
export function decodeAppException(proto: ThriftProtocolName, msg: Buffer, h: MessageHeader): AppException {
  const r = new ThriftReader(proto, msg, h.length);
  let message = '';
  let type: number = AppExceptionType.UNKNOWN;
  r.structBegin();
  for (;;) {
    const f = r.fieldBegin();
    if (f.type === TType.STOP) break;
    if (f.id === 1 && f.type === TType.STRING) message = r.string();
    else if (f.id === 2 && f.type === TType.I32) type = r.i32();
    else r.skip(f.type, f);
  }
  return { message, type };
}
