// Delegation attacks against any target that takes a dtab from its client: the proxy's data path
// (a `prx-dtab` / `prx-ctx-dtab` header), an admin `/delegator.json`, a resolver's HTTP controller.
// Each takes the target's base URL and answers what came back, so a future router can reuse them.
import { request } from 'undici';
import type { DtabBomb } from './dtab-bombs.js';

export interface AttackReply {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
  /** Wall time of the exchange (ms), for generous sanity bounds only. */
  readonly ms: number;
}

async function send(url: string, init: { headers?: Record<string, string> } = {}, timeoutMs = 10_000): Promise<AttackReply> {
  const t0 = performance.now();
  // undici's request, not fetch: the data-path attacks set `Host`.
  const res = await request(url, { headers: init.headers ?? {}, signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, ms: performance.now() - t0 };
}

/** The bomb as a request dtab header on the proxy's data path (`Host` names the entry path). */
export function bombViaHeader(proxyUrl: string, bomb: DtabBomb, host: string, header: 'prx-dtab' | 'prx-ctx-dtab' = 'prx-dtab'): Promise<AttackReply> {
  return send(`${proxyUrl}/`, { headers: { host, [header]: bomb.dtab } });
}

/** The bomb as the `dtab` of an admin `/delegator.json` request. */
export function bombViaDelegator(adminUrl: string, bomb: DtabBomb, namespace: string): Promise<AttackReply> {
  const q = new URLSearchParams({ namespace, path: bomb.path, dtab: bomb.dtab });
  return send(`${adminUrl}/delegator.json?${q.toString()}`);
}

/** The bomb as the `dtab` parameter of a resolver controller view (`bind`, `addr`-less views). */
export function bombViaResolver(
  controllerUrl: string,
  bomb: DtabBomb,
  view: 'bind' | 'resolve' | 'delegate',
  namespace: string,
): Promise<AttackReply> {
  const q = new URLSearchParams({ path: bomb.path, dtab: bomb.dtab });
  return send(`${controllerUrl}/api/1/${view}/${namespace}?${q.toString()}`);
}

/** A plain GET (the legitimate traffic that must keep working between attacks). */
export function plainGet(url: string, headers: Record<string, string> = {}): Promise<AttackReply> {
  return send(url, { headers });
}
