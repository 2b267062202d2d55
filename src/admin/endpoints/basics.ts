import type { Logger } from '../../core/log.js';
import { errorMessage } from '../../core/errors.js';
import type { BuildInfo } from '../build-info.js';
import { jsonResponse, negotiate, textResponse, type AdminEndpoint } from '../handler.js';
import type { AdminServer } from '../server.js';

/** `/admin` and `/admin/index.txt`: every endpoint the security policy lets through. */
export function indexEndpoints(server: AdminServer): AdminEndpoint[] {
  const handler: AdminEndpoint['handler'] = (req) =>
    negotiate(req, {
      json: () => server.endpoints().map(({ path, description, category }) => ({ path, description, category })),
      text: () => {
        const endpoints = server.endpoints();
        const width = Math.max(0, ...endpoints.map((e) => e.path.length));
        return endpoints.map((e) => `${e.path.padEnd(width)}  ${e.description}`.trimEnd()).join('\n');
      },
    });
  return [
    { path: '/admin', handler, description: 'List of all available admin endpoints.' },
    { path: '/admin/index.txt', handler, description: 'List of all available admin endpoints, as text.' },
  ];
}

/** `/admin/ping`: liveness. */
export function pingEndpoint(): AdminEndpoint {
  return {
    path: '/admin/ping',
    description: 'Health check; returns the text `pong`.',
    handler: (req) => negotiate(req, { text: () => 'pong', json: () => 'pong' }),
  };
}

/** `/admin/server_info`: build and process facts. */
export function serverInfoEndpoint(build: BuildInfo): AdminEndpoint {
  return {
    path: '/admin/server_info',
    description: 'Build information.',
    handler: (req) => {
      const uptimeMs = Math.round(process.uptime() * 1000);
      const info = {
        ...build,
        node: process.version,
        pid: process.pid,
        startTime: new Date(Date.now() - uptimeMs).toISOString(),
        uptimeMs,
        platform: process.platform,
        arch: process.arch,
      };
      return negotiate(req, {
        json: () => info,
        text: () =>
          Object.entries(info)
            .map(([k, v]) => `${k}: ${String(v)}`)
            .join('\n'),
      });
    },
  };
}

/**
 * `/admin/shutdown`: POST starts a graceful shutdown. The callback runs once the 200 has been
 * written, so the caller learns the request was accepted even if shutdown closes this server.
 */
export function shutdownEndpoint(shutdown: () => void | Promise<void>, log: Logger): AdminEndpoint {
  return {
    path: '/admin/shutdown',
    method: 'POST',
    description: 'Initiates graceful shutdown (POST).',
    handler: () => ({
      ...textResponse('shutting down'),
      onSent: () => {
        log.info('shutdown requested through the admin interface');
        Promise.resolve()
          .then(shutdown)
          .catch((e: unknown) => log.error({ err: e }, `shutdown failed: ${errorMessage(e)}`));
      },
    }),
  };
}

/** `/config.json`: the parsed configuration, re-serialized. */
export function configEndpoint(config: unknown): AdminEndpoint {
  return {
    path: '/config.json',
    description: 'Current configuration; matches the config file.',
    handler: () => jsonResponse(config),
  };
}
