// Apache Thrift's node runtime (npm `thrift`), used by hand (no generated code): its transports and
// protocols write and read the calls of a small echo service, as a real client and a real server.
import { createRequire } from 'node:module';
import { connect, type Server, type Socket } from 'node:net';

export interface TMessage {
  readonly fname: string;
  readonly mtype: number;
  readonly rseqid: number;
}
export interface TField {
  readonly fname: string;
  readonly ftype: number;
  readonly fid: number;
}
/** The part of Apache Thrift's TProtocol the tests use. */
export interface TProtocol {
  writeMessageBegin(name: string, type: number, seqid: number): void;
  writeMessageEnd(): void;
  writeStructBegin(name: string): void;
  writeStructEnd(): void;
  writeFieldBegin(name: string, type: number, id: number): void;
  writeFieldEnd(): void;
  writeFieldStop(): void;
  writeString(s: string | Buffer): void;
  writeI32(n: number): void;
  writeListBegin(elemType: number, size: number): void;
  writeListEnd(): void;
  writeMapBegin(kt: number, vt: number, size: number): void;
  writeMapEnd(): void;
  writeBool(b: boolean): void;
  writeDouble(d: number): void;
  readMessageBegin(): TMessage;
  readMessageEnd(): void;
  readStructBegin(): void;
  readStructEnd(): void;
  readFieldBegin(): TField;
  readFieldEnd(): void;
  readString(): string;
  skip(type: number): void;
  flush(): void;
}
export interface TTransportWithData {
  commitPosition(): void;
  rollbackPosition(): void;
}
type TransportClass = (new (buffer: Buffer | undefined, onFlush: (buf: Buffer) => void) => unknown) & {
  receiver(cb: (t: TTransportWithData) => void): (data: Buffer) => void;
};
type ProtocolClass = new (transport: unknown) => TProtocol;
interface ThriftLib {
  readonly Thrift: {
    readonly Type: Readonly<Record<string, number>>;
    readonly MessageType: Readonly<Record<string, number>>;
    readonly TApplicationException: new (type?: number, message?: string) => { type: number; message: string; write(p: TProtocol): void; read(p: TProtocol): void };
  };
  readonly TFramedTransport: TransportClass;
  readonly TBufferedTransport: TransportClass;
  readonly TBinaryProtocol: ProtocolClass;
  readonly TCompactProtocol: ProtocolClass;
  readonly InputBufferUnderrunError: new () => Error;
  createMultiplexServer(processor: { process(input: TProtocol, output: TProtocol): void }, opts: { transport: TransportClass; protocol: ProtocolClass; maxLength?: number }): Server;
}

export const thrift = createRequire(import.meta.url)('thrift') as ThriftLib;
export const T = thrift.Thrift.Type as { readonly STOP: number; readonly STRING: number; readonly STRUCT: number; readonly I32: number; readonly LIST: number; readonly MAP: number; readonly BOOL: number; readonly DOUBLE: number };
export const MT = { CALL: 1, REPLY: 2, EXCEPTION: 3, ONEWAY: 4 } as const;

export type Framing = 'framed' | 'buffered';
export type Proto = 'binary' | 'compact';

export function transportClass(f: Framing): TransportClass {
  return f === 'framed' ? thrift.TFramedTransport : thrift.TBufferedTransport;
}
export function protocolClass(p: Proto): ProtocolClass {
  return p === 'binary' ? thrift.TBinaryProtocol : thrift.TCompactProtocol;
}

/** The bytes of a call `name(1: string arg)` as Apache Thrift writes them (with the transport's frame). */
export function encodeCall(f: Framing, p: Proto, name: string, arg: string, seqid: number, type: number = MT.CALL): Buffer {
  let out: Buffer | undefined;
  const Tr = transportClass(f);
  const proto = new (protocolClass(p))(new Tr(undefined, (b) => (out = Buffer.from(b))));
  proto.writeMessageBegin(name, type, seqid);
  proto.writeStructBegin('args');
  proto.writeFieldBegin('arg', T.STRING, 1);
  proto.writeString(arg);
  proto.writeFieldEnd();
  proto.writeFieldStop();
  proto.writeStructEnd();
  proto.writeMessageEnd();
  proto.flush();
  return out as Buffer;
}

/** A reply as a test reads it. */
export interface Reply {
  readonly name: string;
  readonly type: number;
  readonly seqid: number;
  /** The result's field 0 (success). */
  readonly value?: string;
  /** A declared exception (result field 1, a struct whose field 1 is a message). */
  readonly declared?: string;
  /** A TApplicationException. */
  readonly appException?: { readonly type: number; readonly message: string };
}

/** Reads one reply from `input` (throws Apache's underrun error while incomplete). */
export function readReply(input: TProtocol): Reply {
  const m = input.readMessageBegin();
  if (m.mtype === MT.EXCEPTION) {
    const x = new thrift.Thrift.TApplicationException();
    x.read(input);
    input.readMessageEnd();
    return { name: m.fname, type: m.mtype, seqid: m.rseqid, appException: { type: x.type, message: x.message } };
  }
  let value: string | undefined;
  let declared: string | undefined;
  input.readStructBegin();
  for (;;) {
    const f = input.readFieldBegin();
    if (f.ftype === T.STOP) break;
    if (f.fid === 0 && f.ftype === T.STRING) value = input.readString();
    else if (f.fid === 1 && f.ftype === T.STRUCT) {
      input.readStructBegin();
      for (;;) {
        const g = input.readFieldBegin();
        if (g.ftype === T.STOP) break;
        if (g.fid === 1 && g.ftype === T.STRING) declared = input.readString();
        else input.skip(g.ftype);
        input.readFieldEnd();
      }
      input.readStructEnd();
    } else input.skip(f.ftype);
    input.readFieldEnd();
  }
  input.readStructEnd();
  input.readMessageEnd();
  return { name: m.fname, type: m.mtype, seqid: m.rseqid, ...(value === undefined ? {} : { value }), ...(declared === undefined ? {} : { declared }) };
}

/**
 * A client connection that writes calls with Apache Thrift and reads replies in order (several
 * calls may be outstanding: pipelining).
 */
export class ApacheClient {
  readonly socket: Socket;
  readonly #f: Framing;
  readonly #p: Proto;
  readonly #waiting: { resolve: (r: Reply) => void; reject: (e: Error) => void }[] = [];
  #closed: Error | undefined;

  private constructor(socket: Socket, f: Framing, p: Proto) {
    this.socket = socket;
    this.#f = f;
    this.#p = p;
    const P = protocolClass(p);
    const onData = transportClass(f).receiver((t) => {
      const input = new P(t);
      try {
        for (;;) {
          const r = readReply(input);
          t.commitPosition();
          this.#waiting.shift()?.resolve(r);
        }
      } catch (err) {
        if (err instanceof thrift.InputBufferUnderrunError) t.rollbackPosition();
        else this.#fail(err instanceof Error ? err : new Error(String(err)));
      }
    });
    socket.on('data', onData);
    socket.on('error', (e) => this.#fail(e));
    socket.on('close', () => this.#fail(new Error('connection closed')));
  }

  static open(port: number, f: Framing, p: Proto): Promise<ApacheClient> {
    return new Promise((resolve, reject) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => resolve(new ApacheClient(s, f, p)));
      s.once('error', reject);
    });
  }

  #fail(e: Error): void {
    this.#closed ??= e;
    for (const w of this.#waiting.splice(0)) w.reject(e);
  }

  get closed(): boolean {
    return this.#closed !== undefined;
  }

  /** Sends a call; resolves with its reply. */
  call(name: string, arg: string, seqid = 1): Promise<Reply> {
    if (this.#closed !== undefined) return Promise.reject(this.#closed);
    const p = new Promise<Reply>((resolve, reject) => this.#waiting.push({ resolve, reject }));
    this.socket.write(encodeCall(this.#f, this.#p, name, arg, seqid));
    return p;
  }

  /** Sends a oneway call (no reply). */
  oneway(name: string, arg: string, seqid = 1): void {
    this.socket.write(encodeCall(this.#f, this.#p, name, arg, seqid, MT.ONEWAY));
  }

  /** Writes raw bytes (malformed input). */
  raw(bytes: Buffer): void {
    this.socket.write(bytes);
  }

  close(): void {
    this.socket.destroy();
  }
}

const KNOWN: ReadonlySet<string> = new Set(['echo', 'declared', 'boom', 'slow', 'note']);

/** A backend's record of what it was sent. */
export interface BackendLog {
  readonly calls: { readonly name: string; readonly arg: string; readonly seqid: number; readonly type: number }[];
}

/**
 * An echo backend served by Apache Thrift's own server. Methods (the part after a `service:`
 * prefix): echo → `<label>:<arg>`; declared → a declared exception; boom → a TApplicationException;
 * slow → the echo after `arg` ms; note (oneway) → recorded only.
 */
export async function startApacheBackend(f: Framing, p: Proto, label: string): Promise<{ port: number; log: BackendLog; server: Server; close(): Promise<void> }> {
  const log: BackendLog = { calls: [] };
  const processor = {
    process(input: TProtocol, output: TProtocol): void {
      const m = input.readMessageBegin();
      let arg = '';
      input.readStructBegin();
      for (;;) {
        const fl = input.readFieldBegin();
        if (fl.ftype === T.STOP) break;
        if (fl.fid === 1 && fl.ftype === T.STRING) arg = input.readString();
        else input.skip(fl.ftype);
        input.readFieldEnd();
      }
      input.readStructEnd();
      input.readMessageEnd();
      log.calls.push({ name: m.fname, arg, seqid: m.rseqid, type: m.mtype });
      const method = m.fname.includes(':') ? m.fname.slice(m.fname.indexOf(':') + 1) : m.fname;
      // `note` is oneway in the IDL: never answered, whatever type the caller wrote.
      if (m.mtype === MT.ONEWAY || method === 'note') return;
      const reply = (): void => {
        // As a generated processor does: an unknown method is a TApplicationException UNKNOWN_METHOD.
        if (method === 'boom' || !KNOWN.has(method)) {
          output.writeMessageBegin(m.fname, MT.EXCEPTION, m.rseqid);
          const x = new thrift.Thrift.TApplicationException(1, method === 'boom' ? `boom from ${label}` : `Unknown function ${m.fname}`);
          // Apache's node writer takes the type from `code` (its reader sets `type`).
          (x as unknown as { code: number }).code = 1;
          x.write(output);
          output.writeMessageEnd();
          output.flush();
          return;
        }
        output.writeMessageBegin(m.fname, MT.REPLY, m.rseqid);
        output.writeStructBegin('result');
        if (method === 'declared') {
          output.writeFieldBegin('oops', T.STRUCT, 1);
          output.writeStructBegin('Oops');
          output.writeFieldBegin('message', T.STRING, 1);
          output.writeString(`declared ${arg}`);
          output.writeFieldEnd();
          output.writeFieldStop();
          output.writeStructEnd();
        } else {
          output.writeFieldBegin('success', T.STRING, 0);
          output.writeString(`${label}:${arg}`);
        }
        output.writeFieldEnd();
        output.writeFieldStop();
        output.writeStructEnd();
        output.writeMessageEnd();
        output.flush();
      };
      if (method === 'slow') setTimeout(reply, Number(arg));
      else reply();
    },
  };
  // Above Apache's default frame limit (16384000 bytes): the large-message tests send 16 MiB.
  const server = thrift.createMultiplexServer(processor, { transport: transportClass(f), protocol: protocolClass(p), maxLength: 64 * 1024 * 1024 });
  server.on('error', () => {});
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    log,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
