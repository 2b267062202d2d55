// The catalog side of the fake Consul: service instances registered on nodes, with health
// checks, answered as Consul's HTTP API answers them — `/v1/catalog/services` (name → tags, the
// `consul` service included), `/v1/catalog/service/<name>` (flat ServiceNode entries, `tag`
// filter), `/v1/health/service/<name>` (Node/Service/Checks entries, `passing` filter) and
// `/v1/agent/self`. Names and tags match regardless of case, as Consul's indexes do. Every change
// takes the next raft index; each service keeps the index of its last change (Consul's
// `service.<name>` index), so a blocking query on one service wakes only for that service.

export type CheckStatus = 'passing' | 'warning' | 'critical';

export interface Registration {
  readonly node: string;
  readonly nodeAddress: string;
  /** The service instance id (default: the service name). */
  readonly id?: string;
  readonly service: string;
  readonly tags?: readonly string[];
  /** ServiceAddress: empty means "the node's address". */
  readonly address?: string;
  readonly port: number;
  readonly meta?: Readonly<Record<string, string>>;
  /** Health checks of the instance: id → status. */
  readonly checks?: Readonly<Record<string, CheckStatus>>;
}

interface Instance {
  readonly reg: Registration;
  readonly id: string;
  readonly checks: Map<string, CheckStatus>;
  readonly createIndex: number;
  modifyIndex: number;
}

export interface CatalogAnswer {
  readonly status: number;
  readonly body: string;
}

export class FakeConsulCatalog {
  readonly #dc: string;
  readonly #nextIndex: () => number;
  readonly #wake: () => void;
  readonly #instances = new Map<string, Instance>();
  /** Lowercased service name → index of its last change (kept after the service is gone). */
  readonly #serviceIndex = new Map<string, number>();
  #servicesIndex = 0;
  /** The DNS domain the agent reports (Consul's default is `consul.`). */
  domain = 'consul.';

  /** `nextIndex` takes the next raft index; `wake` re-checks blocked queries once the change is in place. */
  constructor(dc: string, nextIndex: () => number, wake: () => void) {
    this.#dc = dc;
    this.#nextIndex = nextIndex;
    this.#wake = wake;
  }

  serves(path: string): boolean {
    return path === '/v1/agent/self' || path === '/v1/catalog/services' || path.startsWith('/v1/catalog/service/') || path.startsWith('/v1/health/service/');
  }

  wipe(): void {
    this.#instances.clear();
    this.#serviceIndex.clear();
    this.#servicesIndex = 0;
  }

  /** Registers (or replaces) an instance. */
  register(reg: Registration): void {
    const id = reg.id ?? reg.service;
    const key = `${reg.node}/${id}`;
    const index = this.#nextIndex();
    const prev = this.#instances.get(key);
    this.#instances.set(key, {
      reg,
      id,
      checks: new Map(Object.entries(reg.checks ?? {})),
      createIndex: prev?.createIndex ?? index,
      modifyIndex: index,
    });
    this.#touch(reg.service, index);
    if (prev !== undefined && prev.reg.service.toLowerCase() !== reg.service.toLowerCase()) this.#touch(prev.reg.service, index);
    this.#wake();
  }

  deregister(node: string, id: string): void {
    const key = `${node}/${id}`;
    const prev = this.#instances.get(key);
    if (prev === undefined) return;
    this.#instances.delete(key);
    this.#touch(prev.reg.service, this.#nextIndex());
    this.#wake();
  }

  setCheck(node: string, id: string, check: string, status: CheckStatus): void {
    const inst = this.#instances.get(`${node}/${id}`);
    if (inst === undefined) throw new Error(`no instance ${node}/${id}`);
    inst.checks.set(check, status);
    const index = this.#nextIndex();
    inst.modifyIndex = index;
    this.#serviceIndex.set(inst.reg.service.toLowerCase(), index);
    this.#wake();
  }

  #touch(service: string, index: number): void {
    this.#serviceIndex.set(service.toLowerCase(), index);
    this.#servicesIndex = index;
  }

  /** The X-Consul-Index of a read (`global`: the raft index, for the agent endpoint). */
  indexOf(path: string, global: number): number {
    if (path === '/v1/agent/self') return global;
    if (path === '/v1/catalog/services') return Math.max(1, this.#servicesIndex);
    const name = decodeURIComponent(path.slice(path.lastIndexOf('/') + 1)).toLowerCase();
    return Math.max(1, this.#serviceIndex.get(name) ?? this.#servicesIndex);
  }

  answer(path: string, q: URLSearchParams): CatalogAnswer {
    if (path === '/v1/agent/self') {
      return json({
        Config: { Datacenter: this.#dc, NodeName: 'fake-agent', NodeID: '00000000-0000-0000-0000-000000000001', Server: true, Version: '1.15.4' },
        DebugConfig: { DNSDomain: this.domain, Datacenter: this.#dc },
        Member: { Name: 'fake-agent', Addr: '127.0.0.1', Port: 8301, Status: 1 },
      });
    }
    if (path === '/v1/catalog/services') {
      const out: Record<string, string[]> = { consul: [] };
      for (const inst of this.#instances.values()) {
        const tags = new Set([...(out[inst.reg.service] ?? []), ...(inst.reg.tags ?? [])]);
        out[inst.reg.service] = [...tags].sort();
      }
      return json(out);
    }
    const name = decodeURIComponent(path.slice(path.lastIndexOf('/') + 1)).toLowerCase();
    const tag = q.get('tag')?.toLowerCase();
    const matching = [...this.#instances.values()]
      .filter((i) => i.reg.service.toLowerCase() === name)
      .filter((i) => tag === undefined || (i.reg.tags ?? []).some((t) => t.toLowerCase() === tag))
      .sort((a, b) => (a.reg.node === b.reg.node ? (a.id < b.id ? -1 : 1) : a.reg.node < b.reg.node ? -1 : 1));
    if (path.startsWith('/v1/catalog/service/')) return json(matching.map((i) => this.#serviceNode(i)));
    const passingOnly = q.has('passing') && q.get('passing') !== 'false';
    return json(matching.filter((i) => !passingOnly || [...i.checks.values()].every((s) => s === 'passing')).map((i) => this.#health(i)));
  }

  #serviceNode(i: Instance): unknown {
    const r = i.reg;
    return {
      ID: '40e4a748-2192-161a-0510-9bf59fe950b5',
      Node: r.node,
      Address: r.nodeAddress,
      Datacenter: this.#dc,
      TaggedAddresses: { lan: r.nodeAddress, wan: r.nodeAddress },
      NodeMeta: {},
      ServiceKind: '',
      ServiceID: i.id,
      ServiceName: r.service,
      ServiceTags: [...(r.tags ?? [])],
      ServiceAddress: r.address ?? '',
      ServiceWeights: { Passing: 1, Warning: 1 },
      ServiceMeta: { ...(r.meta ?? {}) },
      ServicePort: r.port,
      ServiceEnableTagOverride: false,
      CreateIndex: i.createIndex,
      ModifyIndex: i.modifyIndex,
    };
  }

  #health(i: Instance): unknown {
    const r = i.reg;
    return {
      Node: { ID: '40e4a748-2192-161a-0510-9bf59fe950b5', Node: r.node, Address: r.nodeAddress, Datacenter: this.#dc, TaggedAddresses: { lan: r.nodeAddress }, Meta: {} },
      Service: { ID: i.id, Service: r.service, Tags: [...(r.tags ?? [])], Address: r.address ?? '', Meta: { ...(r.meta ?? {}) }, Port: r.port, Weights: { Passing: 1, Warning: 1 } },
      Checks: [...i.checks].map(([id, status]) => ({
        Node: r.node,
        CheckID: id,
        Name: id,
        Status: status,
        Output: '',
        ServiceID: id.startsWith('_service_maintenance') || id === 'serfHealth' || id === '_node_maintenance' ? '' : i.id,
        ServiceName: r.service,
      })),
    };
  }
}

function json(v: unknown): CatalogAnswer {
  return { status: 200, body: JSON.stringify(v) };
}
