import { errorMessage } from '../../core/errors.js';
import {
  type DelegationSource, Dtab, NamingBudgetError, type Path, delegate, delegateTreeJson, firstAddr, readDtab, readPath,
} from '../../naming/index.js';
import { type AdminEndpoint, type AdminRequest, type AdminResponse, jsonResponse, textResponse } from '../handler.js';

/** How long a delegation may wait for namers and addresses (Linkerd: 2 s, then 503). */
export const DELEGATION_TIMEOUT_MS = 2000;

/** A namespace (router label, or resolver namespace) that can explain its delegations. */
export interface DelegationNamespace {
  /** The delegation source, or undefined when its interpreter cannot show delegations. */
  readonly source: DelegationSource | undefined;
  /**
   * The dtab a request's `dtab` parameter is combined with. The proxy's default interpreter
   * expects the full dtab in the request (the UI sends base + edits), so it returns the empty
   * dtab; the resolver returns the namespace's stored dtab, which the parameter is appended to.
   */
  readonly baseDtab: () => Dtab | Promise<Dtab>;
  /**
   * What stands in for a request without a `dtab`: the proxy's routers use their configured dtab,
   * so `?namespace=<router>&path=…` explains what the router does (Linkerd uses the empty dtab,
   * which answers `neg` and reads like a routing result). Absent: the empty dtab.
   */
  readonly defaultDtab?: () => Dtab;
}

/**
 * `/delegator.json`: explains how a path delegates. `GET ?namespace=&path=&dtab=` or a JSON
 * `POST {"namespace","dtab","path"}`; without `dtab`, through the namespace's default dtab.
 * Errors as Linkerd: 400 invalid dtab/path or malformed body, 415 for a non-JSON POST, 405 other
 * methods, 501 for interpreters that cannot explain, 503 `Request timed out.` when namers do not
 * answer within 2 s.
 */
export function delegatorEndpoint(
  path: string,
  namespaces: () => ReadonlyMap<string, DelegationNamespace>,
  timeoutMs = DELEGATION_TIMEOUT_MS,
): AdminEndpoint {
  return {
    path,
    description: 'Explains how a path delegates through a dtab (query: namespace, path, dtab)',
    method: ['GET', 'POST'],
    handler: (req) => handleDelegation(req, namespaces(), timeoutMs),
  };
}

interface DelegationRequest {
  namespace: string | undefined;
  /** Undefined when the request has no `dtab` (an empty one is a dtab). */
  dtab: string | undefined;
  path: string;
}

function parseRequest(req: AdminRequest): DelegationRequest | AdminResponse {
  if (req.method === 'POST') {
    const type = String(req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
    if (type !== 'application/json') return textResponse('Expected Content-Type application/json', 415);
    const text = req.body.toString('utf8');
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return textResponse(`Malformed delegation request: ${text}`, 400);
    }
    const b = body as Record<string, unknown> | null;
    if (!b || typeof b !== 'object' || typeof b['path'] !== 'string' || (b['dtab'] !== undefined && typeof b['dtab'] !== 'string')
      || (b['namespace'] !== undefined && typeof b['namespace'] !== 'string')) {
      return textResponse(`Malformed delegation request: ${text}`, 400);
    }
    return { namespace: b['namespace'], dtab: b['dtab'], path: b['path'] };
  }
  const path = req.query.get('path');
  if (path === null) return textResponse('Malformed delegation request: the path parameter is required', 400);
  return { namespace: req.query.get('namespace') ?? undefined, dtab: req.query.get('dtab') ?? undefined, path };
}

async function handleDelegation(
  req: AdminRequest,
  namespaces: ReadonlyMap<string, DelegationNamespace>,
  timeoutMs: number,
): Promise<AdminResponse> {
  const parsed = parseRequest(req);
  if ('contentType' in parsed) return parsed;
  const nsName = parsed.namespace ?? (namespaces.size === 1 ? [...namespaces.keys()][0] : undefined);
  const ns = nsName === undefined ? undefined : namespaces.get(nsName);
  if (!ns) {
    const known = [...namespaces.keys()].sort().join(', ');
    return textResponse(`Unknown namespace: ${parsed.namespace ?? '(none given)'} (known: ${known})`, 404);
  }
  if (!ns.source) return textResponse(`Name Interpreter for ${nsName ?? ''} cannot show delegations`, 501);
  let dtab: Dtab;
  let path: Path;
  try {
    dtab = parsed.dtab !== undefined ? readDtab(parsed.dtab, { located: true }) : (ns.defaultDtab?.() ?? Dtab.empty);
  } catch (e) {
    return textResponse(`Invalid dtab: ${errorMessage(e)}`, 400);
  }
  try {
    path = readPath(parsed.path);
  } catch (e) {
    return textResponse(`Invalid path: ${errorMessage(e)}`, 400);
  }
  const signal = AbortSignal.any([req.signal, AbortSignal.timeout(timeoutMs)]);
  try {
    const base = await ns.baseDtab();
    const tree = await delegate(ns.source, base.concat(dtab), path, signal);
    const json = await delegateTreeJson(tree, { resolveAddr: (b) => firstAddr(b, signal) });
    return jsonResponse(json);
  } catch (e) {
    if (signal.aborted) return textResponse('Request timed out.', 503);
    // A dtab that expands past the naming budget is a bad request, not a failure of the proxy.
    if (e instanceof NamingBudgetError) return textResponse(`Invalid dtab: ${e.message}`, 400);
    return textResponse(errorMessage(e), 500);
  }
}


/** For namespaces whose request dtab is the whole dtab (the proxy's routers). */
export const emptyBaseDtab = (): Dtab => Dtab.empty;
