import { STATUS_CODES, type IncomingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Socket } from 'node:net';
import { renderError, type ProxyErrorResponse, type RenderedError } from '../headers/error-response.js';

/**
 * How long one side of a tunnel may stay open after the other closed: it was sent our FIN and its
 * pending bytes; a peer that never closes is then cut. (Our sockets do not stay half-open: a FIN
 * received closes the side that got it once its writes are out, which starts this.)
 */
const TUNNEL_CLOSE_GRACE_MS = 5000;

/**
 * A 101 from upstream: writes its head to the client, then splices the two sockets for as long as
 * both stay up. A FIN is passed on (half-close: the other direction keeps flowing); a side that
 * closed after its FIN ends the other gracefully, a side that failed or was cut destroys the
 * other. No idle limit: a quiet WebSocket is a normal WebSocket (as in Linkerd). `early` is what
 * the client sent after its request head; `onClosed` runs once both sides are closed.
 */
export function spliceTunnel(down: Socket, up: Socket, early: Buffer, status: number, headers: IncomingHttpHeaders, onClosed: () => void): void {
  let head = `HTTP/1.1 ${status} ${statusText(status)}\r\n`;
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) head += `${k}: ${one}\r\n`;
  }
  down.write(head + '\r\n');
  if (early.length > 0) up.write(early);
  up.pipe(down);
  down.pipe(up);
  let open = 2;
  const closed = (other: Socket) => (): void => {
    if (--open === 0) onClosed();
    if (other.destroyed) return;
    const self = other === up ? down : up;
    if (!self.readableEnded) {
      // Reset or destroyed without a FIN: nothing more can be exchanged.
      other.destroy();
      return;
    }
    other.end();
    other.setTimeout(TUNNEL_CLOSE_GRACE_MS, () => other.destroy());
  };
  const fail = (): void => {
    up.destroy();
    down.destroy();
  };
  up.on('error', fail);
  down.once('error', fail);
  up.once('close', closed(down));
  down.once('close', closed(up));
}

/** Answers a proxy error on a socket no response object owns (a malformed request) and closes it. */
export function writeRawError(socket: Duplex, err: ProxyErrorResponse, maxHeadersKB: number): void {
  endRawSocket(socket, renderError(err, { maxHeadersKB }));
}

function endRawSocket(socket: Duplex, rendered: RenderedError): void {
  if (!socket.writable) return;
  let head = `HTTP/1.1 ${rendered.status} ${statusText(rendered.status)}\r\nconnection: close\r\n`;
  for (const [k, v] of Object.entries(rendered.headers)) head += `${k}: ${v}\r\n`;
  socket.end(Buffer.concat([Buffer.from(head + '\r\n'), rendered.body]));
}

function statusText(status: number): string {
  return STATUS_CODES[status] ?? 'Error';
}
