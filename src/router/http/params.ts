import type { ClientPolicyConfig, ServicePolicyConfig } from '../../config/index.js';
import { classifierFromConfig, type ResponseClassifier } from '../../protocol/http/classifiers.js';
import { endpointOptions, type ClientLimits, type EndpointOptions } from '../../protocol/http/client-transport.js';
import type { ServiceParams } from '../core/path-service.js';
import { clientParamsOf, RouterPolicies } from '../core/params.js';
import type { ResolvedClient as CoreResolvedClient, RouterParams } from '../core/routing.js';

/** Client parameters a router reads per client id besides what the connection pool needs. */
export interface ResolvedClient extends CoreResolvedClient<EndpointOptions> {
  readonly forwardClientCert: boolean;
}

/**
 * The http router's `client` and `service` policies, resolved per name: the core's parameters plus
 * HTTP's connection pool settings and the `io.prx.http` classifier family. Results are cached per
 * name by the routing core, whose caches bound how many names there are.
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
    return {
      client: clientParamsOf(policy, endpointOptions(policy.params, policy.tls, this.#limits)),
      attemptTimeoutMs: policy.attemptTimeoutMs,
      forwardClientCert: policy.params.forwardClientCert,
    };
  }

  service(dst: string): ServiceParams<ResponseClassifier> {
    return this.#policies.service(dst, httpClassifier);
  }
}

function httpClassifier(cfg: Parameters<typeof classifierFromConfig>[0]): ResponseClassifier {
  return classifierFromConfig(cfg, 'http');
}
