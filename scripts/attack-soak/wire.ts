// Client plumbing of the soak: one raw exchange over a fresh socket (for requests node:http would
// refuse to send) and one HTTP call (for the admin and the resolver). Each resolves to an outcome
// string, never rejects, and bounds its socket with a timeout.
import * as http from 'node:http';
import * as net from 'node:net';

/** What a request came to: the status code (`'400'`), or `timeout`, `reset`, `refused`, `closed` (no answer), `error:<code>`. */
export type Outcome = string;

const STATUS_LINE = /^HTTP\/1\.[01] (\d{3})/;

/** Whether an outcome is an HTTP answer with a status matching `pattern`. */
export function isStatus(outcome: Outcome, pattern: RegExp): boolean {
  return /^\d{3}$/.test(outcome) && pattern.test(outcome);
}

export function errorOutcome(e: unknown): Outcome {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ECONNRESET' || code === 'EPIPE') return 'reset';
  if (code === 'ECONNREFUSED') return 'refused';
  return `error:${code ?? 'unknown'}`;
}

export interface RawExchange {
  port: number;
  /** Bytes written as soon as the socket connects. */
  data: string;
  timeoutMs: number;
  /** Half-close (FIN) after writing, then wait for an answer. */
  halfClose?: boolean;
}

/**
 * Connects, writes `data` and resolves with the status of the first response line (or why there
 * was none). The socket is destroyed once the outcome is known.
 */
export function rawExchange(x: RawExchange): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = net.connect({ port: x.port, host: '127.0.0.1', allowHalfOpen: true });
    let head = '';
    let done = false;
    const finish = (o: Outcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(o);
    };
    const timer = setTimeout(() => finish('timeout'), x.timeoutMs);
    socket.once('connect', () => {
      socket.write(x.data);
      if (x.halfClose) socket.end();
    });
    socket.on('data', (chunk: Buffer) => {
      head += chunk.toString('latin1');
      const eol = head.indexOf('\n');
      if (eol < 0 && head.length < 64) return;
      finish(STATUS_LINE.exec(head)?.[1] ?? 'garbage');
    });
    socket.once('end', () => finish('closed'));
    socket.once('close', () => finish('closed'));
    socket.once('error', (e) => finish(errorOutcome(e)));
  });
}

export interface HttpCall {
  port: number;
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
  timeoutMs: number;
}

export interface HttpAnswer {
  outcome: Outcome;
  status?: number;
  headers?: http.IncomingHttpHeaders;
  /** The body, up to 64 KiB. */
  body: string;
}

const MAX_BODY = 64 * 1024;

/** One request on its own connection (no pool), bounded by `timeoutMs` end to end. */
export function httpCall(c: HttpCall): Promise<HttpAnswer> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (a: HttpAnswer) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.destroy();
      resolve(a);
    };
    const headers: Record<string, string> = { connection: 'close', ...c.headers };
    if (c.body !== undefined) headers['content-length'] = String(Buffer.byteLength(c.body));
    const req = http.request({ host: '127.0.0.1', port: c.port, method: c.method ?? 'GET', path: c.path, headers, agent: false });
    const timer = setTimeout(() => finish({ outcome: 'timeout', body: '' }), c.timeoutMs);
    req.once('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (s: string) => {
        if (body.length < MAX_BODY) body += s;
      });
      const answer = () => finish({ outcome: String(res.statusCode), status: res.statusCode ?? 0, headers: res.headers, body });
      res.once('end', answer);
      res.once('error', answer);
      res.once('aborted', answer);
    });
    req.once('error', (e) => finish({ outcome: errorOutcome(e), body: '' }));
    req.end(c.body);
  });
}

/**
 * A socket held open and fed by the caller (slowloris, trickled bodies, idle connections):
 * resolves with `'open at end'` when the soak destroys it, or with how the server ended it.
 */
export function heldSocket(port: number, onConnect: (s: net.Socket) => void, held: Set<net.Socket>): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    held.add(socket);
    let outcome: Outcome | undefined;
    let head = '';
    socket.setTimeout(600_000, () => socket.destroy());
    socket.once('connect', () => onConnect(socket));
    socket.on('data', (chunk: Buffer) => {
      if (outcome !== undefined) return;
      head += chunk.toString('latin1');
      if (head.includes('\n') || head.length >= 64) outcome = STATUS_LINE.exec(head)?.[1] ?? 'garbage';
    });
    socket.once('error', (e) => (outcome ??= errorOutcome(e)));
    socket.once('close', () => {
      held.delete(socket);
      resolve(outcome ?? (released.has(socket) ? 'open at end' : 'closed'));
    });
  });
}

const released = new WeakSet<net.Socket>();

/** Ends a held socket from the soak's side (recorded as `open at end`). */
export function releaseHeld(s: net.Socket): void {
  released.add(s);
  s.destroy();
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));
