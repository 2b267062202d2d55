import type { IncomingHttpHeaders } from 'node:http';
import type { Deflate, Gzip } from 'node:zlib';
import { compressorFor } from './compression.js';
import { clearResponseContext } from './headers/error-response.js';
import { forwardedHeaderList, stripHopByHopHeaders } from './headers/hop-by-hop.js';
import type { HeaderValue } from './headers/types.js';
import { appendVia } from './headers/via.js';
import type { InboundResponse } from './h1/server.js';
import type { UpstreamExchange } from './upstream.js';

/** How a server forwards responses (`clearContext`, the router's `compressionLevel`): made once per server. */
export interface ForwardOptions {
  readonly clearContext: boolean;
  readonly compressionLevel: number;
}

/** Where the forwarded response's Content-Length is noted (for the access log), before any byte goes out. */
export interface ResponseMeter {
  responseLength: number | undefined;
}

/**
 * Writes an upstream response head to the client and streams its body: hop-by-hop headers out,
 * this hop's `via` entry in, compression when the client accepts it, and with `clearContext` every `prx-*`
 * header removed (an error body of another proxy is dropped). Returns false when nothing streams
 * (the head was the whole response), true once the body is being forwarded.
 */
export function forwardResponse(
  res: InboundResponse,
  ex: UpstreamExchange,
  reqHeaders: IncomingHttpHeaders,
  method: string,
  via: string,
  opts: ForwardOptions,
  meter: ResponseMeter,
): boolean {
  const headers = ex.headers;
  const upgrade = ex.status === 101;
  if (!opts.clearContext) {
    // The common case: one pass over the upstream headers into the list writeHead takes. The
    // compressor looks only at end-to-end headers, so it may run before hop-by-hop stripping.
    const compressor = compressorFor(opts.compressionLevel, reqHeaders, headers, method, ex.status);
    const list = forwardedHeaderList(headers, upgrade, via);
    if (list !== undefined) {
      send(res, ex, list, compressor, meter);
      return true;
    }
    stripHopByHopHeaders(headers, { keepUpgrade: upgrade });
    appendVia(headers, via);
    send(res, ex, headers as Record<string, string | string[]>, compressor, meter);
    return true;
  }
  stripHopByHopHeaders(headers, { keepUpgrade: upgrade });
  appendVia(headers, via);
  if (clearResponseContext(headers)) {
    ex.discard();
    meter.responseLength = 0;
    res.writeHead(ex.status, headers);
    res.end();
    return false;
  }
  send(res, ex, headers as Record<string, string | string[]>, compressorFor(opts.compressionLevel, reqHeaders, headers, method, ex.status), meter);
  return true;
}

function send(
  res: InboundResponse,
  ex: UpstreamExchange,
  head: Record<string, string | string[]> | HeaderValue[],
  compressor: Gzip | Deflate | undefined,
  meter: ResponseMeter,
): void {
  const length = ex.headers['content-length'];
  if (length !== undefined) meter.responseLength = Number(length);
  res.writeHead(ex.status, head);
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
