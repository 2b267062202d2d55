import type { StatsReceiver } from './receiver.js';

/**
 * Linkerd's router stats scopes, built structurally: each label value (a server address, a
 * service path, a client id) is exactly one segment even when it contains `/`. Exporters rely on
 * that to turn `rt/<router>/client/<id>/…` into labels without re-parsing strings:
 *
 * - `rt/<router>/server/<ip>/<port>/…`       (server label `<ip>/<port>`)
 * - `rt/<router>/service/<path>/…`           (service label = path without its leading `/`)
 * - `rt/<router>/client/<id>/…`              (client label = bound id without its leading `/`)
 * - `rt/<router>/client/<id>/service/<path>/…`
 */

/** The single segment naming a server: `<ip>/<port>`. */
export function serverLabel(ip: string, port: number): string {
  return `${ip}/${port}`;
}

/** The single segment naming a service or client: the path or id without its leading slashes. */
export function pathLabel(path: string): string {
  return path.replace(/^\/+/, '');
}

/** `rt/<router>`. */
export function routerStats(root: StatsReceiver, router: string): StatsReceiver {
  return root.scope('rt', router);
}

/** `rt/<router>/server/<ip>/<port>`. */
export function serverStats(router: StatsReceiver, ip: string, port: number): StatsReceiver {
  return router.scope('server', serverLabel(ip, port));
}

/** `rt/<router>/service/<path>`, e.g. `rt/http/service/svc/dog`. */
export function serviceStats(router: StatsReceiver, path: string): StatsReceiver {
  return router.scope('service', pathLabel(path));
}

/** `rt/<router>/client/<id>`, e.g. `rt/http/client/$/inet/127.1/8080`. */
export function clientStats(router: StatsReceiver, clientId: string): StatsReceiver {
  return router.scope('client', pathLabel(clientId));
}

/** `rt/<router>/client/<id>/service/<path>`: per-service stats of one client. */
export function clientServiceStats(client: StatsReceiver, path: string): StatsReceiver {
  return client.scope('service', pathLabel(path));
}

/** Removes a client's subtree when it is evicted from the client cache. */
export function pruneClient(router: StatsReceiver, clientId: string): void {
  router.prune('client', pathLabel(clientId));
}

/** Removes a service's subtree when its path stack is evicted. */
export function pruneService(router: StatsReceiver, path: string): void {
  router.prune('service', pathLabel(path));
}
