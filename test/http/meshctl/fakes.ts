// Wire-faithful fakes of the mesh control plane the io.prx.orch.meshctl kinds talk to (none
// installs here): the v1 pilot's discovery service (`GET /v1/routes`: route configs whose virtual
// hosts are named `<cluster>|<port>`) and apiserver (`GET /v1alpha1/config/route-rule`:
// `[{type, name, spec}]`), and a mixer: a grpc-js server of `istio.mixer.v1.Mixer` built from the
// .proto files by protobufjs here (not from prx's generated descriptor), whose Check answers a
// configurable status and which records every Check and Report with its attributes decoded
// through the message's dictionary.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';

export interface VirtualHost {
  name: string;
  domains: string[];
}

/** A route rule as the apiserver lists it. */
export interface RuleConfig {
  type: 'route-rule';
  name: string;
  spec: Record<string, unknown>;
}

export interface FakePilot {
  /** The discovery service's port (`/v1/routes`). */
  readonly discoveryPort: number;
  /** The apiserver's port (`/v1alpha1/config/route-rule`). */
  readonly apiserverPort: number;
  /** What `/v1/routes` lists (one route config holding these virtual hosts). */
  vhosts: VirtualHost[];
  rules: RuleConfig[];
  /** While set, both answer 503. */
  down: boolean;
  /** While set, both answer 200 with this body instead of their JSON. */
  raw: string | undefined;
  /** Every path requested, per server. */
  readonly hits: { discovery: string[]; apiserver: string[] };
  close(): Promise<void>;
}

function listen(server: Server): Promise<number> {
  return new Promise((r) => server.listen(0, '127.0.0.1', () => r((server.address() as AddressInfo).port)));
}

function closeServer(server: Server): Promise<void> {
  return new Promise((r) => {
    server.closeAllConnections();
    server.close(() => r());
  });
}

export async function startFakePilot(vhosts: VirtualHost[] = [], rules: RuleConfig[] = []): Promise<FakePilot> {
  const hits = { discovery: [] as string[], apiserver: [] as string[] };
  const state: { vhosts: VirtualHost[]; rules: RuleConfig[]; down: boolean; raw: string | undefined } = { vhosts, rules, down: false, raw: undefined };
  const answer = (res: ServerResponse, body: unknown): void => {
    if (state.down) {
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end('unavailable');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(state.raw ?? JSON.stringify(body));
  };
  const discovery = createServer((req, res) => {
    hits.discovery.push(req.url ?? '');
    if (req.method !== 'GET' || req.url !== '/v1/routes') {
      res.writeHead(404);
      res.end();
      return;
    }
    answer(res, [{ name: '80', virtual_hosts: state.vhosts.map((v) => ({ ...v, routes: [{ prefix: '/', cluster: `out.${v.name}` }] })) }]);
  });
  const apiserver = createServer((req, res) => {
    hits.apiserver.push(req.url ?? '');
    if (req.method !== 'GET' || req.url !== '/v1alpha1/config/route-rule') {
      res.writeHead(404);
      res.end();
      return;
    }
    answer(res, state.rules);
  });
  const [discoveryPort, apiserverPort] = await Promise.all([listen(discovery), listen(apiserver)]);
  return {
    discoveryPort,
    apiserverPort,
    get vhosts() {
      return state.vhosts;
    },
    set vhosts(v) {
      state.vhosts = v;
    },
    get rules() {
      return state.rules;
    },
    set rules(r) {
      state.rules = r;
    },
    get down() {
      return state.down;
    },
    set down(d) {
      state.down = d;
    },
    get raw() {
      return state.raw;
    },
    set raw(r) {
      state.raw = r;
    },
    hits,
    close: async () => {
      await Promise.all([closeServer(discovery), closeServer(apiserver)]);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The mixer.

const PROTO_DIR = join(process.cwd(), 'src', 'protocol', 'http', 'meshctl', 'proto');

function loadMixerRoot(): protobuf.Root {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => (target.startsWith('google/protobuf/') ? target : join(PROTO_DIR, target));
  root.loadSync('mixer.proto', { keepCase: true });
  root.resolveAll();
  return root;
}

/** Attributes decoded by name (the dictionary applied), as the mixer sees them. */
export interface DecodedAttributes {
  strings: Record<string, string>;
  int64s: Record<string, number>;
  durationsMs: Record<string, number>;
  stringMaps: Record<string, Record<string, string>>;
}

interface PAttributes {
  dictionary?: Record<string, string>;
  string_attributes?: Record<string, string>;
  int64_attributes?: Record<string, number>;
  duration_attributes?: Record<string, { seconds?: number; nanos?: number }>;
  stringMap_attributes?: Record<string, { map?: Record<string, string> }>;
}

function decodeAttributes(a: PAttributes | undefined): DecodedAttributes {
  const dict = a?.dictionary ?? {};
  const name = (i: string): string => {
    const w = dict[i];
    if (w === undefined) throw new Error(`attribute index ${i} is not in the message's dictionary`);
    return w;
  };
  const out: DecodedAttributes = { strings: {}, int64s: {}, durationsMs: {}, stringMaps: {} };
  for (const [i, v] of Object.entries(a?.string_attributes ?? {})) out.strings[name(i)] = v;
  for (const [i, v] of Object.entries(a?.int64_attributes ?? {})) out.int64s[name(i)] = Number(v);
  for (const [i, d] of Object.entries(a?.duration_attributes ?? {})) out.durationsMs[name(i)] = Number(d.seconds ?? 0) * 1000 + (d.nanos ?? 0) / 1e6;
  for (const [i, m] of Object.entries(a?.stringMap_attributes ?? {})) {
    const map: Record<string, string> = {};
    for (const [k, v] of Object.entries(m.map ?? {})) map[name(k)] = v;
    out.stringMaps[name(i)] = map;
  }
  return out;
}

export interface FakeMixer {
  readonly port: number;
  readonly checks: DecodedAttributes[];
  readonly reports: DecodedAttributes[];
  /** The status every Check answers (code 0: OK); `null`: a CheckResponse without a result. */
  verdict: { code: number; message: string } | null;
  close(): Promise<void>;
}

export async function startFakeMixer(port = 0): Promise<FakeMixer> {
  const root = loadMixerRoot();
  const t = (n: string): protobuf.Type => root.lookupType(`istio.mixer.v1.${n}`);
  const [CheckRequest, CheckResponse, ReportRequest, ReportResponse] = [t('CheckRequest'), t('CheckResponse'), t('ReportRequest'), t('ReportResponse')];
  const codec = (type: protobuf.Type) => ({
    serialize: (v: object) => Buffer.from(type.encode(type.fromObject(v)).finish()),
    deserialize: (b: Buffer) => type.toObject(type.decode(b), { longs: Number }) as { request_index?: number; attribute_update?: PAttributes },
  });
  const check = codec(CheckRequest);
  const checkRsp = codec(CheckResponse);
  const report = codec(ReportRequest);
  const reportRsp = codec(ReportResponse);
  const definition: grpc.ServiceDefinition = {
    Check: {
      path: '/istio.mixer.v1.Mixer/Check',
      requestStream: true,
      responseStream: true,
      requestSerialize: check.serialize,
      requestDeserialize: check.deserialize,
      responseSerialize: checkRsp.serialize,
      responseDeserialize: checkRsp.deserialize,
    },
    Report: {
      path: '/istio.mixer.v1.Mixer/Report',
      requestStream: true,
      responseStream: true,
      requestSerialize: report.serialize,
      requestDeserialize: report.deserialize,
      responseSerialize: reportRsp.serialize,
      responseDeserialize: reportRsp.deserialize,
    },
  };
  const mixer = {
    checks: [] as DecodedAttributes[],
    reports: [] as DecodedAttributes[],
    verdict: { code: 0, message: '' } as { code: number; message: string } | null,
  };
  interface MixerRequest {
    request_index?: number;
    attribute_update?: PAttributes;
  }
  type Duplex = grpc.ServerDuplexStream<MixerRequest, object>;
  const server = new grpc.Server();
  server.addService(definition, {
    Check: (call: Duplex) => {
      call.on('data', (req: MixerRequest) => {
        mixer.checks.push(decodeAttributes(req.attribute_update));
        const v = mixer.verdict;
        call.write({ request_index: req.request_index ?? 0, ...(v === null ? {} : { result: { code: v.code, message: v.message } }) });
      });
      call.on('end', () => call.end());
    },
    Report: (call: Duplex) => {
      call.on('data', (req: MixerRequest) => {
        mixer.reports.push(decodeAttributes(req.attribute_update));
        call.write({ request_index: req.request_index ?? 0, result: { code: 0 } });
      });
      call.on('end', () => call.end());
    },
  });
  const bound = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
  });
  return Object.assign(mixer, {
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.tryShutdown(() => resolve());
        setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 500).unref();
      }),
  });
}
