import type { ClientPolicyConfig, ServicePolicyConfig } from '../../config/index.js';
import type { ResponseClassifier } from '../../protocol/http/classifiers.js';
import { classifierFromConfig } from '../../protocol/http/classifiers.js';
import type { EndpointOptions } from '../../protocol/http/client-transport.js';
import type { ResponseBodyLimits } from '../../protocol/http/upstream.js';
import type { ServiceParams } from '../core/path-service.js';
import { RouterPolicies } from '../core/params.js';
import type { ResolvedClient as CoreResolvedClient, RouterParams } from '../core/routing.js';

const INT32_MAX = 2147483647;
/** Keep-alive when the config says "forever": undici still honours the server's own timeout hint. */
const FOREVER_KEEPALIVE_MS = 600_000;
const CONNECT_TIMEOUT_MS = 10_000;
/** `responseIdleTimeoutMs` when not configured: Envoy's stream idle time; long polls fit under it. */
export const RESPONSE_IDLE_TIMEOUT_MS = 300_000;

/** Client parameters a router reads per client id besides what the connection pool needs. */
export interface ResolvedClient extends CoreResolvedClient<EndpointOptions> {
  readonly forwardClientCert: boolean;
}

/** Limits of the http router that shape every client. */
export interface ClientLimits {
  readonly maxHeaderBytes: number;
  /** `maxResponseKB`, `streamingEnabled` and `maxChunkKB` as every exchange applies them. */
  readonly responseBody: ResponseBodyLimits;
}

/**
 * Resolves the router's `client` and `service` policies per name (static configs matched by
 * prefix, later ones winning) into ready-to-use parameters. Results are cached per name: the
 * caches above bound how many names there are.
 */
export class HttpParams implements RouterParams<EndpointOptions, ResponseClassifier, ResolvedClient> {
  readonly #policies: RouterPolicies;
  readonly #limits: ClientLimits;

  constructor(client: ClientPolicyConfig, service: ServicePolicyConfig, limits: ClientLimits) {
    this.#policies = new RouterPolicies(client, service);
    this.#limits = limits;
  }

  client(id: string): ResolvedClient {
    const policy = this.#policies.client(id);
    const p = policy.params;
    const pool = p.hostConnectionPool;
    const session = p.clientSession;
    // Two different limits (Finagle's pool idle time spares minSize connections; its session idle
    // time, below the pool, closes any connection): the h1 pool gets each; undici, with no minSize,
    // only ever applies the shorter one.
    const sessionIdle = session.idleTimeMs ?? null;
    const anyIdle = sessionIdle === null ? pool.idleTimeMs : Math.min(sessionIdle, pool.idleTimeMs ?? Infinity);
    return {
      client: {
        transport: {
          maxConnections: pool.maxSize >= INT32_MAX ? null : pool.maxSize,
          maxWaiters: pool.maxWaiters,
          minConnections: pool.minSize,
          keepAliveTimeoutMs: pool.idleTimeMs ?? FOREVER_KEEPALIVE_MS,
          keepAliveMaxTimeoutMs: anyIdle ?? FOREVER_KEEPALIVE_MS,
          sessionIdleTimeMs: sessionIdle,
          lifeTimeMs: session.lifeTimeMs ?? null,
          maxHeaderBytes: this.#limits.maxHeaderBytes,
          responseBody: this.#limits.responseBody,
          connectTimeoutMs: CONNECT_TIMEOUT_MS,
          responseIdleTimeoutMs: p.responseIdleTimeoutMs ?? RESPONSE_IDLE_TIMEOUT_MS,
          tls: policy.tls,
        },
        accrual: policy.accrual,
        balancer: policy.balancer,
        failFast: policy.failFast,
        requeueBudget: policy.requeueBudget,
      },
      attemptTimeoutMs: policy.attemptTimeoutMs,
      forwardClientCert: p.forwardClientCert,
    };
  }

  service(dst: string): ServiceParams<ResponseClassifier> {
    return this.#policies.service(dst, httpClassifier);
  }
}

function httpClassifier(cfg: Parameters<typeof classifierFromConfig>[0]): ResponseClassifier {
  return classifierFromConfig(cfg, 'http');
}
