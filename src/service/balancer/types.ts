// The contract between a client (which owns endpoints, their pools and load counters) and a load
// balancer (which only chooses among them). Balancers never own a node's load or health: the
// client keeps `load` and `available` current, and the balancer reads them at pick time.

/** One endpoint as a balancer sees it. */
export interface BalancerNode {
  /** "host:port", identity of the endpoint. */
  readonly key: string;
  /** From Address.weight (fs namer `* w`), > 0; balancers must honour weights. */
  readonly weight: number;
  /** Outstanding requests right now (the client maintains it). */
  readonly load: number;
  /** False while failure accrual has it marked dead / its pool is closed. */
  readonly available: boolean;
}

export interface Balancer<N extends BalancerNode> {
  /** Replaces the endpoint set (discovery changed). Keep state (ewma, rr cursor) for nodes whose key stays. */
  update(nodes: readonly N[]): void;
  /** The node for the next request; undefined only when there are no nodes at all. When no node is available,
   *  still returns one (Finagle: fail open, the client will fail it) — after up to maxEffort re-picks. */
  pick(): N | undefined;
  /** Outcome of a request the balancer picked (latency in ms); ewma uses it, others may ignore. */
  observe(node: N, latencyMs: number, failed: boolean): void;
  /** Nodes incl. probation ones (stat loadbalancer/size). */
  readonly size: number;
  /** Nodes with available === true (stat loadbalancer/available). */
  readonly available: number;
  readonly nodes: readonly N[];
  /** Aperture kinds: how many nodes the window holds now (stat loadbalancer/aperture). */
  readonly aperture?: number;
}

/** Makes one balancer per client; each call returns an independent instance. */
export type BalancerFactory = <N extends BalancerNode>() => Balancer<N>;

/** Injected sources of randomness (`[0, 1)`) and time (ms); tests pass deterministic ones. */
export interface BalancerContext {
  readonly random?: () => number;
  readonly now?: () => number;
}
