import { STATUS_CODES } from 'node:http';
import {
  appendRouterContext,
  chunkedResponsePlaceholder,
  diagnosticDecision,
  dtabResolutionLines,
  formatRouterContext,
  type DiagnosticDecision,
} from '../../protocol/http/headers/diagnostic.js';
import { stripHopByHopHeaders } from '../../protocol/http/headers/hop-by-hop.js';
import { appendVia } from '../../protocol/http/headers/via.js';
import { ResponseTooLargeError, type BodySink, type UpstreamExchange } from '../../protocol/http/upstream.js';
import { underlyingInterpreter } from '../../interpreter/transformer.js';
import { type BoundName, type DelegationSource, type NameInterpreter, type Path, addressKey, delegate } from '../../naming/index.js';
import { BindingFailedError, NoBrokersAvailableError } from '../../service/failures.js';
import { pickLeaf } from '../core/binding.js';
import type { HttpPathService, HttpServed, RequestScope } from './types.js';

/**
 * Diagnostic tracing (Linkerd's DiagnosticTracer): a `TRACE` with `Max-Forwards` and
 * `prx-add-context: true` collects, from every proxy on its way, a block saying how the request
 * was routed. What to do with a request is decided once ingress has identified it; a server with
 * `clearContext` has already dropped `prx-add-context`, which turns the context off.
 */
export function diagnosticFor(ctx: RequestScope): DiagnosticDecision {
  return ctx.out.method === 'TRACE' ? diagnosticDecision('TRACE', ctx.out.headers) : 'pass';
}

/** How long the delegation explained in a context block may take. */
const DELEGATION_TIMEOUT_MS = 2000;

/** Answers a TRACE whose `Max-Forwards` reached 0 here: empty, or the router context alone. */
export async function answerDiagnostic(ctx: RequestScope, svc: HttpPathService, withContext: boolean): Promise<void> {
  const res = ctx.res;
  let body = '';
  if (withContext) {
    const router = ctx.server.router;
    const treeOrWait = svc.binding.tree(ctx.bindDeadline, router.cfg.bindingTimeoutMs);
    const tree = treeOrWait instanceof Promise ? await treeOrWait : treeOrWait;
    const pick = pickLeaf(tree);
    if (pick.kind === 'neg') throw new NoBrokersAvailableError(svc.dst);
    if (pick.kind === 'fail') throw new BindingFailedError(svc.dst, new Error('the name resolved to a failure (!)'));
    body = appendRouterContext('', await routerContext(ctx, pick.name.idStr, currentAddresses(pick.name), ''));
  }
  const payload = Buffer.from(body, 'utf8');
  ctx.status = 200;
  ctx.responseLength = payload.length;
  res.writeHead(200, { 'content-type': 'message/http', 'content-length': payload.length });
  ctx.succeedOnFinish(true);
  res.end(payload);
}

/**
 * Writes an upstream response to a diagnostic TRACE with this router's context appended: the body
 * is collected (a chunked one is replaced by its head and a note, as Linkerd does) and sent with
 * its new length.
 */
export async function sendWithContext(ctx: RequestScope, served: HttpServed, success: boolean): Promise<void> {
  const res = ctx.res;
  const ex = served.attempt.exchange;
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
    body = (await collect(ex, ctx.server.router.cfg.maxResponseKB * 1024)).toString('utf8');
  }
  const client = served.client;
  const context = await routerContext(ctx, client.id, client.addresses, served.attempt.endpoint.key);
  const payload = Buffer.from(appendRouterContext(body, context), 'utf8');
  stripHopByHopHeaders(headers, { keepUpgrade: false });
  delete headers['content-length'];
  appendVia(headers, ctx.server.router.via.entry(ctx.req.httpVersion));
  headers['content-length'] = String(payload.length);
  if (res.destroyed) return;
  ctx.status = ex.status;
  ctx.responseLength = payload.length;
  res.writeHead(ex.status, headers);
  ctx.succeedOnFinish(success);
  res.end(payload);
}

/** The `--- Router: <label> ---` block for this request. */
async function routerContext(ctx: RequestScope, clientId: string, addresses: readonly string[], selected: string): Promise<string> {
  const router = ctx.server.router;
  const dst = ctx.dst as Path;
  const dtab = ctx.localDtab === undefined || ctx.localDtab.size === 0 ? router.baseDtab : router.baseDtab.concat(ctx.localDtab);
  let resolution: string[] = [];
  // Interpreters that bind elsewhere (the resolver's) cannot explain a delegation step by step.
  const source = underlyingInterpreter(router.interpreter) as NameInterpreter & Partial<DelegationSource>;
  try {
    if (typeof source.namerLookup === 'function') {
      const tree = await delegate(source as DelegationSource, dtab, dst, AbortSignal.timeout(DELEGATION_TIMEOUT_MS));
      resolution = dtabResolutionLines(tree, clientId);
    }
  } catch (e) {
    // The block is a diagnostic aid: a delegation that cannot be explained leaves its lines out.
    router.log.debug({ err: e instanceof Error ? e.message : String(e), dst: dst.show }, 'diagnostic delegation failed');
  }
  return formatRouterContext({
    routerLabel: router.label,
    durationMs: performance.now() - ctx.started,
    serviceName: dst.show,
    clientName: clientId,
    addresses,
    selectedAddress: selected,
    dtabResolution: resolution,
  });
}

/** The addresses a bound name has right now (`ip:port`). */
function currentAddresses(name: BoundName): string[] {
  const addr = name.addr.sample();
  return addr.kind === 'bound' ? addr.addresses.map(addressKey) : [];
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
