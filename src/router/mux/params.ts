import type { ClientPolicyConfig, ServicePolicyConfig } from '../../config/index.js';
import type { MuxClassification, MuxEndpointOptions } from '../../protocol/mux/client-transport.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../../protocol/mux/frame.js';
import { DEFAULT_HANDSHAKE_TIMEOUT_MS } from '../../protocol/mux/client-session.js';
import type { Logger } from 'pino';
import type { ServiceParams } from '../core/path-service.js';
import { clientParamsOf, RouterPolicies } from '../core/params.js';
import type { ResolvedClient, RouterParams } from '../core/routing.js';

const PING_INTERVAL_MS = 5000;
const PING_TIMEOUT_MS = 4000;
const CLASSIFICATION: MuxClassification = Object.freeze({ retryErrors: false });

interface MuxClientKeys {
  readonly maxMessageBytes?: number;
  readonly maxFrameBytes?: number;
  readonly pingIntervalMs?: number;
  readonly pingTimeoutMs?: number;
  readonly handshakeTimeoutMs?: number;
}

/**
 * The mux router's `client` and `service` policies resolved per name: the core's parameters plus
 * one session per endpoint with its size limits and ping liveness (hostConnectionPool only lends
 * `maxWaiters`).
 */
export class MuxParams implements RouterParams<MuxEndpointOptions, MuxClassification, ResolvedClient<MuxEndpointOptions>> {
  readonly #policies: RouterPolicies;
  readonly #log: Logger | undefined;

  constructor(client: ClientPolicyConfig, service: ServicePolicyConfig, log?: Logger) {
    this.#policies = new RouterPolicies(client, service);
    this.#log = log;
  }

  client(id: string): ResolvedClient<MuxEndpointOptions> {
    const policy = this.#policies.client(id);
    const p = policy.params;
    const k = p as unknown as MuxClientKeys;
    const transport: MuxEndpointOptions = {
      tls: policy.tls,
      maxMessageBytes: k.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
      maxFrameBytes: k.maxFrameBytes,
      pingIntervalMs: k.pingIntervalMs ?? PING_INTERVAL_MS,
      pingTimeoutMs: k.pingTimeoutMs ?? PING_TIMEOUT_MS,
      handshakeTimeoutMs: k.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS,
      idleTimeMs: p.clientSession.idleTimeMs,
      lifeTimeMs: p.clientSession.lifeTimeMs,
      maxWaiters: p.hostConnectionPool.maxWaiters,
      log: this.#log,
    };
    return { client: clientParamsOf(policy, transport), attemptTimeoutMs: policy.attemptTimeoutMs };
  }

  service(dst: string): ServiceParams<MuxClassification> {
    return this.#policies.service(dst, () => CLASSIFICATION);
  }
}
