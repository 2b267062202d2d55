// Raw-socket attacks on an HTTP/1.1 proxy's connection handling, shared by the adversarial tests
// (tunnel.test.ts, abandon.test.ts) and usable against any router: each takes the target's
// address, speaks bytes a well-behaved client would not, and resolves with what it saw. Every wait
// is bounded, so an attack on a proxy that never answers fails instead of hanging.
import { readdirSync } from 'node:fs';
import type { Server } from 'node:http';
import { connect, type Socket } from 'node:net';

export interface Target {
  readonly host: string;
  readonly port: number;
}

/** What a raw client received before the connection closed (or the wait ran out). */
export interface Seen {
  /** Everything received, latin1. */
  readonly text: string;
  /** The status of the first response head, 0 when none arrived. */
  readonly status: number;
  /** Whether the server closed (FIN or reset) within the wait. */
  readonly closed: boolean;
}

/** Descriptors open in this process (sockets of in-process routers and backends included). */
export function openFds(): number {
  return readdirSync('/proc/self/fd').length;
}

/** Open connections of a node server. */
export function connectionsOf(server: Server): Promise<number> {
  return new Promise((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
}

/** Waits for `pred` (polled), failing with `what` after `ms`. */
export async function until(pred: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await pred()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export function openSocket(t: Target): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(t.port, t.host);
    s.once('connect', () => {
      s.off('error', reject);
      resolve(s);
    });
    s.once('error', reject);
  });
}

/**
 * Collects what `s` receives until the peer closes it or `ms` pass (then it is destroyed). The
 * result's `closed` says which.
 */
export function collect(s: Socket, ms: number): Promise<Seen> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let done = false;
    const finish = (closed: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      resolve({ text, status: m === null ? 0 : Number(m[1]), closed });
    };
    const timer = setTimeout(() => finish(false), ms);
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('end', () => finish(true));
    s.on('close', () => finish(true));
    s.on('error', () => finish(true));
  });
}

/** The head of an `Upgrade: websocket` request for `path`. */
export function upgradeRequest(path: string, host = 'ws'): string {
  return (
    `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
    'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n'
  );
}

/**
 * Asks to upgrade and waits for the whole answer and the close (a refused upgrade must be
 * answered as an ordinary response, then the connection closed).
 */
export async function refusedUpgrade(t: Target, path: string, ms = 3000): Promise<Seen> {
  const s = await openSocket(t);
  s.write(upgradeRequest(path));
  return collect(s, ms);
}

/**
 * Sends a complete request and returns how to leave before any answer: `fin` ends the client's
 * side (a half-close), `reset` aborts the connection.
 */
export async function sendAndHold(t: Target, request: string): Promise<(how: 'fin' | 'reset') => void> {
  const s = await openSocket(t);
  s.on('error', () => {});
  s.write(request);
  return (how) => {
    if (how === 'fin') s.end();
    else s.resetAndDestroy();
  };
}

/** Sends a complete request, waits `afterMs`, then leaves (see {@link sendAndHold}). */
export async function abandonRequest(t: Target, request: string, how: 'fin' | 'reset', afterMs: number): Promise<void> {
  const leave = await sendAndHold(t, request);
  await new Promise((r) => setTimeout(r, afterMs));
  leave(how);
}

/**
 * Starts a request with a `Content-Length` of `declared` bytes, sends `sent` of them and then
 * nothing; resolves with what the proxy answered before it closed (or `ms` passed).
 */
export async function trickledBody(t: Target, path: string, declared: number, sent: number, ms: number): Promise<Seen> {
  const s = await openSocket(t);
  s.write(`POST ${path} HTTP/1.1\r\nHost: web\r\nContent-Length: ${declared}\r\n\r\n`);
  s.write(Buffer.alloc(sent, 'b'));
  return collect(s, ms);
}

/** A plain GET on a new connection; resolves with the answer (the request asks to close). */
export async function plainGet(t: Target, path: string, host = 'web', ms = 3000): Promise<Seen> {
  const s = await openSocket(t);
  s.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  return collect(s, ms);
}
