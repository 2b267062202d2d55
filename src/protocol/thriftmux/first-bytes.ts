/**
 * Finagle's thriftmux downgrade, decided from a connection's first bytes: a plain thrift client
 * on a thriftmux port is served as thrift. Read as mux, a framed binary thrift CALL (version word
 * 0x80010001) is an Rerr (type 0x80) with tag 0x010001, and a ONEWAY one tag 0x010004; an R-message
 * is never valid from a client, so Finagle takes those, and any frame that is no mux message at
 * all (a compact message starts with 0x82, no mux type), as thrift. Everything else is mux.
 */
import type { Socket } from 'node:net';
import type { FirstBytesRoute } from '../mux/first-bytes.js';
import { MessageType, type ThriftProtocolName } from '../thrift/message.js';

const BINARY_VERSION_HI = 0x80;
const BINARY_VERSION_LO = 0x01;
const COMPACT_PROTOCOL_ID = 0x82;

/**
 * Whether `head` starts a plain thrift message in `proto` (framed: after the 4-byte frame size),
 * as a CALL or ONEWAY; undefined while too few bytes have arrived.
 */
export function looksLikePlainThrift(head: Buffer, proto: ThriftProtocolName, framed: boolean): boolean | undefined {
  const at = framed ? 4 : 0;
  if (proto === 'binary') {
    if (head.length < at + 4) return undefined;
    if (head[at] !== BINARY_VERSION_HI || head[at + 1] !== BINARY_VERSION_LO) return false;
    const type = (head[at + 3] as number) & 0x07;
    return type === MessageType.CALL || type === MessageType.ONEWAY;
  }
  if (head.length < at + 2) return undefined;
  if (head[at] !== COMPACT_PROTOCOL_ID) return false;
  const type = ((head[at + 1] as number) >> 5) & 0x07;
  return type === MessageType.CALL || type === MessageType.ONEWAY;
}

/** The downgrade route, asked before mux's: connections that start like plain thrift go to `adopt`. */
export function thriftDowngradeRoute(proto: ThriftProtocolName, framed: boolean, adopt: (socket: Socket, head: Buffer) => void): FirstBytesRoute {
  return { accepts: (head) => looksLikePlainThrift(head, proto, framed), adopt };
}
