import { answerTrace, forwardTraceWithContext } from '../../protocol/http/diagnostic-response.js';
import { diagnosticDecision, dtabResolutionLines, formatRouterContext, type DiagnosticDecision } from '../../protocol/http/headers/diagnostic.js';
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
  let context: string | undefined;
  if (withContext) {
    const treeOrWait = svc.binding.tree(ctx.bindDeadline, ctx.server.router.cfg.bindingTimeoutMs);
    const tree = treeOrWait instanceof Promise ? await treeOrWait : treeOrWait;
    const pick = pickLeaf(tree);
    if (pick.kind === 'neg') throw new NoBrokersAvailableError(svc.dst);
    if (pick.kind === 'fail') throw new BindingFailedError(svc.dst, new Error('the name resolved to a failure (!)'));
    context = await routerContext(ctx, pick.name.idStr, currentAddresses(pick.name), '');
  }
  answerTrace(ctx, context);
}

/** Writes an upstream response to a diagnostic TRACE with this router's context appended. */
export function sendWithContext(ctx: RequestScope, served: HttpServed, success: boolean): Promise<void> {
  const router = ctx.server.router;
  const client = served.client;
  return forwardTraceWithContext(ctx, served.attempt.exchange, () => routerContext(ctx, client.id, client.addresses, served.attempt.endpoint.key), {
    via: router.via.entry(ctx.req.httpVersion),
    maxResponseBytes: router.cfg.maxResponseKB * 1024,
    success,
  });
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
