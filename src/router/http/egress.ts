import { Dtab, NamingBudgetError } from '../../naming/index.js';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { renderError, clearResponseContext, type RenderedError } from '../../protocol/http/headers/error-response.js';
import { forwardedHeaderList, stripHopByHopHeaders } from '../../protocol/http/headers/hop-by-hop.js';
import type { HeaderValue } from '../../protocol/http/headers/types.js';
import type { UpstreamExchange } from '../../protocol/http/upstream.js';
import type { InboundResponse } from '../../protocol/http/h1/server.js';
import type { Deflate, Gzip } from 'node:zlib';
import {
  ConflictingContentLengthError,
  DynBoundTimeoutError,
  InvalidDtabHeaderError,
  ProxyError,
  RichConnectionFailedError,
  RichNoBrokersAvailableError,
  UpstreamFailureError,
} from '../../protocol/http/headers/proxy-errors.js';
import { appendVia } from '../../protocol/http/headers/via.js';
import { ProxyErrorResponse } from '../../protocol/http/headers/error-response.js';
import { BindingFailedError, BindingTimeoutError, ConnectionFailedError, NoBrokersAvailableError, RouterFailure } from '../../service/failures.js';
import type { HttpServed, RequestScope } from './types.js';
import { compressorFor } from './compression.js';

/** Turns a failure anywhere in the request path into the error response Linkerd would send. */
export function renderProxyError(ctx: RequestScope, err: unknown): unknown {
  if (err instanceof ProxyError || err instanceof ProxyErrorResponse) return err;
  const service = ctx.dst?.show ?? 'unknown';
  const router = ctx.server.router;
  if (err instanceof NoBrokersAvailableError) {
    return new RichNoBrokersAvailableError({ service, baseDtab: router.baseDtab, overrideDtab: ctx.localDtab ?? Dtab.empty });
  }
  if (err instanceof BindingTimeoutError) return new DynBoundTimeoutError(err.timeoutMs, err.dst);
  // A request dtab that blows the naming budget is the request's fault, like an unparsable one.
  if (err instanceof BindingFailedError && err.cause instanceof NamingBudgetError && (ctx.localDtab?.size ?? 0) > 0) {
    return new InvalidDtabHeaderError(err.cause.message, { cause: err.cause });
  }
  if (err instanceof ConnectionFailedError) {
    return new RichConnectionFailedError({ remote: err.address, service, client: err.clientId, addresses: err.addresses }, { cause: err });
  }
  // undici's parser reports repeated Content-Length headers in a response head as a length mismatch.
  // The other core failures (timeouts, a full pool, an admin target) render as they are.
  if (err instanceof RouterFailure) return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH' || code === 'PRX_ERR_UPSTREAM_CONTENT_LENGTH') return new ConflictingContentLengthError('response');
  return new UpstreamFailureError(err);
}

/** Writes a proxy-generated error response (or cuts the connection when the head is already out). */
export function writeErrorResponse(ctx: RequestScope, err: unknown): void {
  const rendered = renderError(err instanceof ProxyError || err instanceof ProxyErrorResponse ? err : renderProxyError(ctx, err), {
    maxHeadersKB: ctx.server.router.cfg.maxHeadersKB,
    clearContext: ctx.server.cfg.clearContext,
  });
  const log = ctx.server.router.log;
  if (rendered.status >= 500) log.debug({ err: err instanceof Error ? err.message : String(err), dst: ctx.dst?.show }, 'request failed');
  const res = ctx.res;
  ctx.status = rendered.status;
  if (res.headersSent) {
    res.destroy(err instanceof Error ? err : undefined);
    return;
  }
  ctx.responseLength = rendered.body.length;
  res.writeHead(rendered.status, rendered.headers);
  res.end(rendered.body);
}

/** Writes the upstream response head and streams its body to the client. */
export function writeUpstreamHead(ctx: RequestScope, served: HttpServed, success: boolean): void {
  const ex = served.attempt.exchange;
  const headers = ex.headers;
  if (ex.socket !== undefined) {
    tunnel(ctx, served);
    return;
  }
  const res = ctx.res;
  const upgrade = ex.status === 101;
  ctx.status = ex.status;
  const cfg = ctx.server.cfg;
  if (!cfg.clearContext) {
    // The common case: one pass over the upstream headers into the list writeHead takes. The
    // compressor looks only at end-to-end headers, so it may run before hop-by-hop stripping.
    const compressor = compressorFor(ctx.server.router.cfg.compressionLevel, ctx.req.headers, headers, ctx.out.method, ex.status);
    const list = forwardedHeaderList(headers, upgrade, ctx.server.router.via.entry(ctx.req.httpVersion));
    if (list !== undefined) {
      sendUpstreamResponse(ctx, res, ex, list, compressor, success);
      return;
    }
    stripHopByHopHeaders(headers, { keepUpgrade: upgrade });
    appendVia(headers, ctx.server.router.via.entry(ctx.req.httpVersion));
    sendUpstreamResponse(ctx, res, ex, headers as Record<string, string | string[]>, compressor, success);
    return;
  }
  stripHopByHopHeaders(headers, { keepUpgrade: upgrade });
  appendVia(headers, ctx.server.router.via.entry(ctx.req.httpVersion));
  if (clearResponseContext(headers)) {
    ex.discard();
    ctx.responseLength = 0;
    res.writeHead(ex.status, headers);
    res.end();
    ctx.finish(ex.status, success);
    return;
  }
  const compressor = compressorFor(ctx.server.router.cfg.compressionLevel, ctx.req.headers, headers, ctx.out.method, ex.status);
  sendUpstreamResponse(ctx, res, ex, headers as Record<string, string | string[]>, compressor, success);
}

function sendUpstreamResponse(
  ctx: RequestScope,
  res: InboundResponse,
  ex: UpstreamExchange,
  head: Record<string, string | string[]> | HeaderValue[],
  compressor: Gzip | Deflate | undefined,
  success: boolean,
): void {
  const length = ex.headers['content-length'];
  if (length !== undefined) ctx.responseLength = Number(length);
  res.writeHead(ex.status, head);
  ctx.succeedOnFinish(success);
  if (compressor === undefined) {
    ex.forward(res);
  } else {
    pump(compressor, res);
    ex.forward(compressor);
  }
}

/** Streams the compressor's output into the response, with backpressure. */
function pump(compressor: Gzip | Deflate, res: InboundResponse): void {
  const resume = (): void => {
    compressor.resume();
  };
  compressor.on('data', (chunk: Buffer) => {
    if (!res.write(chunk)) {
      compressor.pause();
      res.once('drain', resume);
    }
  });
  compressor.once('end', () => res.end());
  compressor.once('error', (err) => res.destroy(err));
}

/**
 * How long one side of a tunnel may stay open after the other closed: it was sent our FIN and its
 * pending bytes; a peer that never closes is then cut. (Our sockets do not stay half-open: a FIN
 * received closes the side that got it once its writes are out, which starts this.)
 */
const TUNNEL_CLOSE_GRACE_MS = 5000;

/**
 * A 101 from upstream: the client connection leaves the HTTP server and the two sockets are
 * spliced for as long as both stay up. A FIN is passed on (half-close: the other direction keeps
 * flowing); a side that closed after its FIN ends the other gracefully, a side that failed or was
 * cut destroys the other. No idle limit: a quiet WebSocket is a normal WebSocket (as in Linkerd).
 */
function tunnel(ctx: RequestScope, served: HttpServed): void {
  const ex = served.attempt.exchange;
  const up = ex.socket as Socket;
  const early = ctx.res.takeSocket();
  if (early === undefined) {
    // The client is gone, or the request body was not all read: no tunnel.
    up.destroy();
    ctx.res.destroy();
    ctx.finish(0, false);
    return;
  }
  const down = ctx.req.socket;
  ctx.status = ex.status;
  let head = `HTTP/1.1 ${ex.status} ${statusText(ex.status)}\r\n`;
  for (const [k, v] of Object.entries(ex.headers)) {
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) head += `${k}: ${one}\r\n`;
  }
  down.write(head + '\r\n');
  if (early.length > 0) up.write(early);
  up.pipe(down);
  down.pipe(up);
  let open = 2;
  const closed = (other: Socket) => (): void => {
    if (--open === 0) ctx.finish(101, true);
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
