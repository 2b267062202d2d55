import { STATUS_CODES } from 'node:http';
import { appendRouterContext, chunkedResponsePlaceholder } from './headers/diagnostic.js';
import { stripHopByHopHeaders } from './headers/hop-by-hop.js';
import { appendVia } from './headers/via.js';
import type { InboundResponse } from './h1/server.js';
import { ResponseTooLargeError, type BodySink, type UpstreamExchange } from './upstream.js';

/** The request a diagnostic answer completes (the router's request context). */
export interface DiagnosticTarget {
  readonly res: InboundResponse;
  status: number;
  responseLength: number | undefined;
  succeedOnFinish(success: boolean): void;
}

/** Answers a TRACE whose `Max-Forwards` reached 0 here: an empty body, or this router's context block. */
export function answerTrace(target: DiagnosticTarget, context: string | undefined): void {
  const payload = Buffer.from(context === undefined ? '' : appendRouterContext('', context), 'utf8');
  target.status = 200;
  target.responseLength = payload.length;
  target.res.writeHead(200, { 'content-type': 'message/http', 'content-length': payload.length });
  target.succeedOnFinish(true);
  target.res.end(payload);
}

/**
 * Writes an upstream response to a diagnostic TRACE with this router's `context` appended: the
 * body is collected up to `maxResponseBytes` (a chunked one is replaced by its head and a note, as
 * Linkerd does) and sent with its new length, hop-by-hop headers out and this hop's `via` in.
 */
export async function forwardTraceWithContext(
  target: DiagnosticTarget,
  ex: UpstreamExchange,
  context: () => Promise<string>,
  opts: { readonly via: string; readonly maxResponseBytes: number; readonly success: boolean },
): Promise<void> {
  const res = target.res;
  const headers = ex.headers;
  const chunked = headers['transfer-encoding'] !== undefined && headers['content-length'] === undefined;
  let body: string;
  if (chunked) {
    ex.discard();
    const head: [string, string][] = [];
    for (const [k, v] of Object.entries(headers)) {
      if (v === undefined) continue;
      for (const one of Array.isArray(v) ? v : [v]) head.push([k, one]);
    }
    body = chunkedResponsePlaceholder(head, ex.status, STATUS_CODES[ex.status] ?? '');
  } else {
    body = (await collect(ex, opts.maxResponseBytes)).toString('utf8');
  }
  const payload = Buffer.from(appendRouterContext(body, await context()), 'utf8');
  stripHopByHopHeaders(headers, { keepUpgrade: false });
  delete headers['content-length'];
  appendVia(headers, opts.via);
  headers['content-length'] = String(payload.length);
  if (res.destroyed) return;
  target.status = ex.status;
  target.responseLength = payload.length;
  res.writeHead(ex.status, headers);
  target.succeedOnFinish(opts.success);
  res.end(payload);
}

/**
 * The whole response body, at most `limit` bytes (`maxResponseKB`): a body with a length was
 * checked against it already, but one read until the connection closes has none.
 */
function collect(ex: UpstreamExchange, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const sink: BodySink = {
      write: (chunk) => {
        size += chunk.length;
        if (size > limit) {
          // The caller aborts the exchange and answers the error.
          reject(new ResponseTooLargeError(limit, undefined));
          return true;
        }
        chunks.push(chunk);
        return true;
      },
      end: () => resolve(Buffer.concat(chunks)),
      destroy: (err) => reject(err ?? new Error('response body failed')),
      once: () => sink,
    };
    ex.forward(sink);
  });
}
