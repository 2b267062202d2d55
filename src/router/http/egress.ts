import type { Socket } from 'node:net';
import { RouterFailure } from '../../service/failures.js';
import { renderError, ProxyErrorResponse } from '../../protocol/http/headers/error-response.js';
import {
  ConflictingContentLengthError,
  InvalidDtabHeaderError,
  ProxyError,
  richRoutingFailure,
  UpstreamFailureError,
} from '../../protocol/http/headers/proxy-errors.js';
import { forwardResponse } from '../../protocol/http/forward-response.js';
import { restoreHostInResponse } from '../../protocol/http/headers/host-rewrite.js';
import { spliceTunnel } from '../../protocol/http/h1/tunnel.js';
import { requestDtabFailure } from '../core/binding.js';
import type { HttpServed, RequestScope } from './types.js';

/** Turns a failure anywhere in the request path into the error response Linkerd would send. */
export function renderProxyError(ctx: RequestScope, err: unknown): unknown {
  if (err instanceof ProxyError || err instanceof ProxyErrorResponse) return err;
  const rich = richRoutingFailure(err, { service: ctx.dst?.show ?? 'unknown', baseDtab: ctx.server.router.baseDtab, localDtab: ctx.localDtab });
  if (rich !== undefined) return rich;
  const budget = requestDtabFailure(err, ctx.localDtab);
  if (budget !== undefined) return new InvalidDtabHeaderError(budget.message, { cause: budget });
  // The other core failures (timeouts, a full pool, an admin target) render as they are.
  if (err instanceof RouterFailure) return err;
  // undici's parser reports repeated Content-Length headers in a response head as a length mismatch.
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
  if (ex.socket !== undefined) {
    tunnel(ctx, served);
    return;
  }
  const server = ctx.server;
  ctx.status = ex.status;
  ctx.succeedOnFinish(success);
  restoreHostInResponse(ctx.out, ex.headers);
  const streaming = forwardResponse(ctx.res, ex, ctx.req.headers, ctx.out.method, server.router.via.entry(ctx.req.httpVersion), server.forwarding, ctx);
  // Nothing streams (clearContext dropped an error body): the head was the whole response.
  if (!streaming) ctx.finish(ex.status, success);
}

/** A 101 from upstream: the client connection leaves the HTTP server and the two sockets are spliced. */
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
  ctx.status = ex.status;
  spliceTunnel(ctx.req.socket, up, early, ex.status, ex.headers, () => ctx.finish(101, true));
}
