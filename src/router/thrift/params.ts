import type { ClientPolicyConfig, ServicePolicyConfig } from '../../config/index.js';
import { THRIFT_CLASSIFICATION, type ThriftClassification } from '../../protocol/thrift/client-protocol.js';
import type { ThriftEndpointOptions } from '../../protocol/thrift/client-transport.js';
import type { ThriftProtocolName } from '../../protocol/thrift/message.js';
import type { ServiceParams } from '../core/path-service.js';
import { clientParamsOf, RouterPolicies } from '../core/params.js';
import type { ResolvedClient, RouterParams } from '../core/routing.js';

/** The thrift keys of a client policy. */
interface ThriftClientKeys {
  readonly thriftFramed?: boolean;
  readonly attemptExtendedUpgrade?: boolean;
  readonly thriftProtocol?: ThriftProtocolName;
}

/**
 * The thrift router's `client` and `service` policies resolved per name: the core's parameters
 * plus each endpoint's connection pool (framing, protocol, the TTwitter upgrade, pool sizes).
 * `thriftProtocol` set on a client (the older placement) wins over the router's.
 */
export class ThriftParams implements RouterParams<ThriftEndpointOptions, ThriftClassification, ResolvedClient<ThriftEndpointOptions>> {
  readonly #policies: RouterPolicies;
  readonly #protocol: ThriftProtocolName;
  readonly #maxMessageBytes: number;

  constructor(client: ClientPolicyConfig, service: ServicePolicyConfig, protocol: ThriftProtocolName, maxMessageBytes: number) {
    this.#policies = new RouterPolicies(client, service);
    this.#protocol = protocol;
    this.#maxMessageBytes = maxMessageBytes;
  }

  client(id: string): ResolvedClient<ThriftEndpointOptions> {
    const policy = this.#policies.client(id);
    const p = policy.params;
    const t = p as unknown as ThriftClientKeys;
    const transport: ThriftEndpointOptions = {
      framed: t.thriftFramed ?? true,
      protocol: t.thriftProtocol ?? this.#protocol,
      maxMessageBytes: this.#maxMessageBytes,
      attemptUpgrade: t.attemptExtendedUpgrade ?? false,
      maxConnections: p.hostConnectionPool.maxSize,
      maxWaiters: p.hostConnectionPool.maxWaiters,
      idleTimeMs: p.clientSession.idleTimeMs ?? p.hostConnectionPool.idleTimeMs,
      tls: policy.tls,
    };
    return { client: clientParamsOf(policy, transport), attemptTimeoutMs: policy.attemptTimeoutMs };
  }

  service(dst: string): ServiceParams<ThriftClassification> {
    return this.#policies.service(dst, () => THRIFT_CLASSIFICATION);
  }
}
