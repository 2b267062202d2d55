import type { Dtab } from '../../naming/index.js';
import type { InboundRequest } from './h1/server.js';
import { clearContext, readDeadlineHeaders, readDtabHeaders, writeDeadlineHeader, writeDtabHeader } from './headers/context.js';
import { stripHopByHopHeaders } from './headers/hop-by-hop.js';
import { PayloadTooLargeError } from './headers/proxy-errors.js';
import { appendViaToRequest, checkCallDepth } from './headers/via.js';
import type { OutboundRequest } from './client-transport.js';

/**
 * A proxy's first pass over an inbound request, before it is identified: the client's hop-by-hop
 * headers out, an absolute-form target made origin-form, the context headers read (cleared first
 * with `clearContext`), the call depth checked and the deadline carried on. Returns the request's
 * own dtab (`prx-ctx-dtab` then `prx-dtab`).
 */
export function readInboundRequest(req: InboundRequest, out: OutboundRequest, clear: boolean): Dtab {
  const headers = req.headers;
  // The client's hop-by-hop list applies to the client's headers only: stripped before prx adds
  // its own, so `Connection: prx-dst-service` (or `via`, `forwarded`…) cannot remove them.
  stripHopByHopHeaders(headers, { keepUpgrade: req.upgrade });
  // Absolute-form targets (clients using prx as an HTTP proxy) become origin-form plus Host, as
  // Linkerd's ProxyRewriteFilter does, before anything reads the URI. The server let only
  // origin-form, `*` (OPTIONS) and absolute-form it could parse through (CONNECT is a 405).
  if (out.path.charCodeAt(0) !== 0x2f && out.path !== '*') {
    const u = new URL(out.path);
    out.path = `${u.pathname}${u.search}`;
    headers.host = u.host;
  }
  if (clear) clearContext(headers);
  checkCallDepth(headers);
  const localDtab = readDtabHeaders(headers);
  writeDeadlineHeader(headers, readDeadlineHeaders(headers));
  return localDtab;
}

/**
 * The headers an identified request leaves with: its logical name (`prx-dst-service`), its dtab,
 * this hop's Via entry and optional timestamp; an upgrade becomes the exchange's (its headers
 * leave the head); `Expect` is answered here, not forwarded.
 */
export function stampOutboundRequest(req: InboundRequest, out: OutboundRequest, dst: string, localDtab: Dtab, via: string, timestampHeader: string | undefined): void {
  const headers = req.headers;
  headers['prx-dst-service'] = dst;
  writeDtabHeader(headers, localDtab);
  if (req.upgrade) {
    out.upgrade = headers['upgrade'] ?? 'websocket';
    delete headers['upgrade'];
    delete headers['connection'];
  }
  appendViaToRequest(headers, via);
  if (timestampHeader !== undefined) headers[timestampHeader.toLowerCase()] = String(Date.now());
  if (headers['expect'] !== undefined) delete headers['expect'];
}

/** Bodies up to this size are buffered so the request can be retried; larger ones stream. */
export const RETRY_BUFFER_BYTES = 8 * 1024;

/** The router's request-body limits: `maxRequestKB` (in bytes) and `streamingEnabled`. */
export interface RequestBodyLimits {
  readonly maxRequestBytes: number;
  readonly streaming: boolean;
}

/**
 * Sets the outbound request's body from the inbound one: none, a buffer (small enough to retry,
 * or streaming disabled: aggregated up to the limit) or the stream itself. Returns a promise only
 * when the body has to be read first. A Content-Length over the limit is refused at once.
 */
export function prepareRequestBody(req: InboundRequest, out: OutboundRequest, limits: RequestBodyLimits): Promise<void> | undefined {
  const n = req.contentLength;
  if (n >= 0) {
    if (n > limits.maxRequestBytes) throw new PayloadTooLargeError(n, limits.maxRequestBytes);
    if (n === 0) return undefined;
    if (n <= RETRY_BUFFER_BYTES || !limits.streaming) {
      return req.readBody(n).then((body) => {
        out.body = body;
      });
    }
    out.body = req.bodyStream();
    return undefined;
  }
  if (req.chunked) {
    // Chunked: forwarded as a stream (never retried). Without streaming, it is aggregated up to the limit.
    if (!limits.streaming) {
      return req.readBody(limits.maxRequestBytes).then((body) => {
        out.body = body;
        req.headers['content-length'] = String(body.length);
      });
    }
    out.body = req.bodyStream();
  }
  return undefined;
}
