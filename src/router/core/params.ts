import type { KindConfig } from '../../config/index.js';
import { clientParamDefaults, serviceParamDefaults, type BackoffConfig, type ClientPolicyConfig, type ServicePolicyConfig } from '../../config/index.js';
import { readPath } from '../../naming/index.js';
import { balancerFromConfig } from '../../service/balancer/index.js';
import type { BalancerFactory } from '../../service/balancer/types.js';
import { clientTls, type ClientTlsConfig, type ClientTlsSettings } from '../../service/tls-settings.js';
import { accrualFromConfig } from '../../service/policy/accrual-kinds.js';
import { backoffFromConfig, type FailureAccrualPolicyFactory } from '../../service/policy/index.js';
import { PolicyResolver } from '../../service/policy/params.js';
import type { ClientParams } from './client.js';
import type { ServiceParams } from './path-service.js';

/** A client policy's parameters as configured (the `client` section, after defaults). */
export interface ClientPolicyParams {
  hostConnectionPool: { minSize: number; maxSize: number; idleTimeMs?: number; maxWaiters: number };
  tls?: ClientTlsConfig;
  loadBalancer: KindConfig;
  failFast: boolean;
  requeueBudget: { minRetriesPerSec: number; percentCanRetry: number; ttlSecs: number };
  failureAccrual: KindConfig;
  requestAttemptTimeoutMs?: number;
  clientSession: { idleTimeMs?: number; lifeTimeMs?: number };
  forwardClientCert: boolean;
  responseIdleTimeoutMs?: number;
}

interface ServicePolicyParams {
  retries: { budget: { minRetriesPerSec: number; percentCanRetry: number; ttlSecs: number }; backoff?: BackoffConfig };
  totalTimeoutMs?: number;
  responseClassifier?: KindConfig;
}

/** What every protocol's client takes from the policy for one client id. */
export interface ClientPolicy {
  /** The configured parameters, for the protocol's transport (pool sizes, session times…). */
  readonly params: ClientPolicyParams;
  readonly tls: ClientTlsSettings | undefined;
  readonly accrual: FailureAccrualPolicyFactory;
  readonly balancer: BalancerFactory;
  readonly failFast: boolean;
  readonly requeueBudget: ClientPolicyParams['requeueBudget'];
  readonly attemptTimeoutMs: number | undefined;
}

/** The core's client parameters from a resolved policy and the protocol's transport options. */
export function clientParamsOf<TransportOpts>(policy: ClientPolicy, transport: TransportOpts): ClientParams<TransportOpts> {
  return { transport, accrual: policy.accrual, balancer: policy.balancer, failFast: policy.failFast, requeueBudget: policy.requeueBudget };
}

/**
 * A router's `client` and `service` policies (static configs matched by prefix, later ones
 * winning), resolved per client id and per logical name into the core's parameters. Each protocol
 * adds its transport's settings and its classifier family.
 */
export class RouterPolicies {
  readonly #clients: PolicyResolver<ClientPolicyParams>;
  readonly #services: PolicyResolver<ServicePolicyParams>;

  constructor(client: ClientPolicyConfig, service: ServicePolicyConfig) {
    this.#clients = new PolicyResolver(client, clientParamDefaults);
    this.#services = new PolicyResolver(service, serviceParamDefaults);
  }

  client(id: string): ClientPolicy {
    const { params, vars } = this.#clients.resolve(readPath(id));
    return {
      params,
      tls: clientTls(params.tls, vars, id),
      accrual: accrualFromConfig(params.failureAccrual),
      balancer: balancerFromConfig(params.loadBalancer),
      failFast: params.failFast,
      requeueBudget: params.requeueBudget,
      attemptTimeoutMs: params.requestAttemptTimeoutMs,
    };
  }

  /**
   * The service parameters of `dst`; `classifier` builds the protocol's classifier from
   * `responseClassifier` and the protocol's own service keys (h2's retry buffers).
   */
  service<C>(dst: string, classifier: (cfg: KindConfig | undefined, params: Readonly<Record<string, unknown>>) => C): ServiceParams<C> {
    const { params: p } = this.#services.resolve(readPath(dst));
    return {
      classifier: classifier(p.responseClassifier, p as unknown as Readonly<Record<string, unknown>>),
      budget: p.retries.budget,
      backoff: p.retries.backoff === undefined ? undefined : backoffFromConfig(p.retries.backoff),
      totalTimeoutMs: p.totalTimeoutMs,
    };
  }
}
