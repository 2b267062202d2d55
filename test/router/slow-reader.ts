// A client that writes requests to a server but never reads its replies (the slow-reader case of
// the back-pressure tests): it writes while the kernel takes its bytes and stops once the server
// has stopped reading it (no drain for a while), or after `count` requests.
import { connect, type Socket } from 'node:net';
import { collectGarbage } from '../helpers/gc.js';

export interface SlowReader {
  readonly socket: Socket;
  /** Requests fully handed to the kernel. */
  readonly sent: number;
}

export async function floodWithoutReading(port: number, request: (i: number) => Buffer, count: number, stallMs = 500): Promise<SlowReader> {
  // No 'data' listener: node reads at most its stream buffer, then the kernel's window fills.
  const socket = connect({ port, host: '127.0.0.1' });
  socket.on('error', () => undefined);
  await new Promise<void>((r) => socket.once('connect', () => r()));
  let sent = 0;
  for (let i = 0; i < count; i++) {
    if (!socket.write(request(i))) {
      const drained = await Promise.race([
        new Promise<boolean>((r) => socket.once('drain', () => r(true))),
        new Promise<boolean>((r) => setTimeout(r, stallMs, false).unref()),
      ]);
      if (!drained) break;
    }
    sent = i + 1;
  }
  return { socket, sent };
}

/**
 * Array-buffer bytes still referenced, after full garbage collections (so garbage is not counted;
 * backing stores are freed after the collection, hence the pause and the second pass).
 */
export async function liveArrayBuffers(): Promise<number> {
  collectGarbage();
  await new Promise((r) => setTimeout(r, 50));
  collectGarbage();
  return process.memoryUsage().arrayBuffers;
}


