import type { ClientPolicyConfig, KindConfig, ServicePolicyConfig } from '../../config/index.js';
import type { H2Classification, H2EndpointOptions } from '../../protocol/h2/client-transport.js';
import { h2ClassifierFromConfig } from '../../protocol/h2/classifiers.js';
import { clientSessionSettings, type H2SettingsConfig } from '../../protocol/h2/settings.js';
import type { ServiceParams } from '../core/path-service.js';
import { clientParamsOf, RouterPolicies } from '../core/params.js';
import type { ResolvedClient as CoreResolvedClient, RouterParams } from '../core/routing.js';

/** Client parameters the h2 router reads per client id besides the session's. */
export interface ResolvedH2Client extends CoreResolvedClient<H2EndpointOptions> {
  readonly forwardClientCert: boolean;
}

/** The spec's defaults of the h2 service keys. */
const CLASSIFICATION_TIMEOUT_MS = 100;
const RETRY_BUFFER_BYTES = 16_383;

const SETTINGS_DEFAULTS: H2SettingsConfig = { windowUpdateRatio: 0.99, initialStreamWindowBytes: 65_535, maxFrameBytes: 16_384 };

/**
 * The h2 router's `client` and `service` policies resolved per name: the core's parameters plus a
 * session per endpoint (the h2 settings; hostConnectionPool only lends `maxWaiters`, h2 uses one
 * connection per endpoint) and the h2 classifiers with their retry buffers.
 */
export class H2Params implements RouterParams<H2EndpointOptions, H2Classification, ResolvedH2Client> {
  readonly #policies: RouterPolicies;

  constructor(client: ClientPolicyConfig, service: ServicePolicyConfig) {
    this.#policies = new RouterPolicies(client, service);
  }

  client(id: string): ResolvedH2Client {
    const policy = this.#policies.client(id);
    const p = policy.params;
    const settings = { ...SETTINGS_DEFAULTS, ...(p as unknown as Partial<H2SettingsConfig>) };
    const transport: H2EndpointOptions = {
      settings: clientSessionSettings(settings),
      tls: policy.tls,
      idleTimeMs: p.clientSession.idleTimeMs,
      lifeTimeMs: p.clientSession.lifeTimeMs,
      maxWaiters: p.hostConnectionPool.maxWaiters,
    };
    return { client: clientParamsOf(policy, transport), attemptTimeoutMs: policy.attemptTimeoutMs, forwardClientCert: p.forwardClientCert };
  }

  service(dst: string): ServiceParams<H2Classification> {
    return this.#policies.service(dst, classification);
  }
}

function classification(cfg: KindConfig | undefined, params: Readonly<Record<string, unknown>>): H2Classification {
  const buffers = (params['retryBufferSize'] ?? {}) as { requestBytes?: number; responseBytes?: number };
  return {
    classifier: h2ClassifierFromConfig(cfg),
    classificationTimeoutMs: (params['classificationTimeoutMs'] as number | undefined) ?? CLASSIFICATION_TIMEOUT_MS,
    requestBytes: buffers.requestBytes ?? RETRY_BUFFER_BYTES,
    responseBytes: buffers.responseBytes ?? RETRY_BUFFER_BYTES,
  };
}
