/**
 * Diagnostic tracing: a `TRACE` request with `Max-Forwards: n` and `prx-add-context: true` makes
 * every proxy on the way append a block describing how it routed the request:
 *
 * ```
 * --- Router: <label> ---
 * request duration: 3 ms
 * service name: /svc/dog
 * client name: /$/inet/127.1/8080
 * addresses: [127.0.0.1:8080]
 * selected address: 127.0.0.1:8080
 * dtab resolution:
 *   /svc/dog
 *   /$/inet/127.1/8080/dog (/svc=>/$/inet/127.1/8080)
 * ```
 *
 * With n > 0 the proxy decrements `Max-Forwards` and forwards; with n = 0 it answers itself.
 */
import { isNopDentry, type BoundName, type DelegateTree } from '../../../naming/index.js';
import { javaTrim } from './context.js';
import { MAX_FORWARDS, PRX_ADD_CONTEXT } from './names.js';
import { InvalidMaxForwardsError } from './proxy-errors.js';
import type { HeaderMap } from './types.js';
import { firstHeaderValue } from './values.js';

/**
 * What to do with a TRACE request:
 * - `pass`: not diagnostic; route it like any request.
 * - `answer`: answer locally with an empty 200 (Max-Forwards reached 0).
 * - `answerWithContext`: answer locally, the body being the router context block.
 * - `forward`: forward it (Max-Forwards was decremented); return the response unchanged.
 * - `forwardWithContext`: forward it, then append the router context to the response body.
 */
export type DiagnosticDecision = 'pass' | 'answer' | 'answerWithContext' | 'forward' | 'forwardWithContext';

const INT32 = /^[+-]?\d+$/;

/**
 * Java's `Integer.parseInt` of a `Max-Forwards` value; undefined when absent. Throws
 * {@link InvalidMaxForwardsError} (a 400 `Invalid value for Max-Forwards header`) otherwise.
 */
export function parseMaxForwards(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!INT32.test(value)) throw new InvalidMaxForwardsError();
  const n = Number(value);
  if (n < -2147483648 || n > 2147483647) throw new InvalidMaxForwardsError();
  return n;
}

/** Finagle's `StringUtil.toBoolean`: `true` (any case) or `1`. */
function isTrue(value: string | undefined): boolean {
  return value !== undefined && (value === '1' || value.toLowerCase() === 'true');
}

/**
 * Decides how to treat a request of `method` (Linkerd's DiagnosticTracer). For a forwarded
 * diagnostic TRACE, `Max-Forwards` is decremented in `headers`. Throws
 * {@link InvalidMaxForwardsError} for a TRACE whose `Max-Forwards` is not an integer.
 */
export function diagnosticDecision(method: string, headers: HeaderMap): DiagnosticDecision {
  if (method !== 'TRACE') return 'pass';
  const maxForwards = parseMaxForwards(firstHeaderValue(headers, MAX_FORWARDS));
  const addContext = isTrue(firstHeaderValue(headers, PRX_ADD_CONTEXT));
  if (maxForwards === undefined) return addContext ? 'forwardWithContext' : 'pass';
  if (maxForwards === 0) return addContext ? 'answerWithContext' : 'answer';
  if (maxForwards < 0) return 'pass';
  headers[MAX_FORWARDS] = String(maxForwards - 1);
  return addContext ? 'forwardWithContext' : 'forward';
}

/** What the router-context block reports. */
export interface RouterContext {
  readonly routerLabel: string;
  /** Time since the request reached this proxy; printed as whole milliseconds. */
  readonly durationMs: number;
  /** The logical name; `/` when the request was not identified. */
  readonly serviceName: string;
  /** The bound id; `/` when the request was not bound. */
  readonly clientName: string;
  /** The client's endpoints, `ip:port`. */
  readonly addresses: readonly string[];
  /** The endpoint the request went to, `ip:port`, or empty. */
  readonly selectedAddress: string;
  /** See {@link dtabResolutionLines}. */
  readonly dtabResolution: readonly string[];
}

/** The `--- Router: <label> ---` block, ending with a newline. */
export function formatRouterContext(ctx: RouterContext): string {
  return (
    `--- Router: ${ctx.routerLabel} ---\n` +
    `request duration: ${Math.trunc(ctx.durationMs)} ms\n` +
    `service name: ${ctx.serviceName}\n` +
    `client name: ${ctx.clientName}\n` +
    `addresses: [${ctx.addresses.join(', ')}]\n` +
    `selected address: ${ctx.selectedAddress}\n` +
    `dtab resolution:\n${ctx.dtabResolution.join('\n')}\n`
  );
}

/**
 * The `dtab resolution` lines: each step of the delegation from the service name to the leaf bound
 * to `clientId`, as `  <path>` or `  <path> (<dentry>)`. Empty when no leaf has that id.
 */
export function dtabResolutionLines(tree: DelegateTree<BoundName>, clientId: string): string[] {
  const steps: string[] = [];
  return findLeaf(tree, clientId, steps) ? steps : [];
}

// Depth-first search recording the path to the first matching leaf; `steps` is unwound on a miss.
function findLeaf(tree: DelegateTree<BoundName>, clientId: string, steps: string[]): boolean {
  const mark = steps.length;
  const dentry = isNopDentry(tree.dentry) ? '' : ` (${tree.dentry.show})`;
  steps.push(`  ${tree.path.show}${dentry}`);
  let found = false;
  switch (tree.type) {
    case 'leaf':
      found = tree.value.idStr === clientId;
      break;
    case 'delegate':
    case 'transformation':
      found = findLeaf(tree.tree, clientId, steps);
      break;
    case 'alt':
      found = tree.trees.some((t) => findLeaf(t, clientId, steps));
      break;
    case 'union':
      found = tree.trees.some((w) => findLeaf(w.tree, clientId, steps));
      break;
    case 'neg':
    case 'fail':
    case 'empty':
    case 'exception':
      break;
  }
  if (!found) steps.length = mark;
  return found;
}

/**
 * A response body with the router context appended: the body trimmed (as Java's `trim`), a blank
 * line, then the block. A locally answered TRACE has an empty body, so its text starts with the
 * blank line.
 */
export function appendRouterContext(body: string, context: string): string {
  return `${javaTrim(body)}\n\n${context}`;
}

/**
 * What replaces a chunked (streamed) response body in a diagnostic trace, which is not buffered:
 * the response's headers, its status line and a note.
 */
export function chunkedResponsePlaceholder(
  headers: Iterable<readonly [string, string]>,
  status: number,
  reason: string,
): string {
  let out = '';
  for (const [name, value] of headers) out += `${out === '' ? '' : '\n'}${name}: ${value}`;
  return `${out}\nHTTP ${status} - ${reason}\nDiagnostic trace encountered chunked response. Response content discarded.`;
}
