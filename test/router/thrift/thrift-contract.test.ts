// The router contract (test/router/contract.ts) against the thrift router: framed binary, the
// logical name `/svc/<name>` from the method (thriftMethodInDst), raw thrift backends whose acts
// are replies, TApplicationExceptions, held calls and cut connections.
import { createServer, type Socket } from 'node:net';
import { MessageReader } from '../../../src/protocol/thrift/framing.js';
import { readMessageHeader } from '../../../src/protocol/thrift/message.js';
import { protocolContract, type BackendAct, type ContractBackend, type Outcome } from '../contract.js';
import { ApacheClient, encodeCall, MT, type Reply } from './apache.js';
import { startThriftRouter } from './harness.js';

/** A REPLY (`ok`) or a TApplicationException (`err`) answering `name`/`seqid`, framed binary. */
function answer(name: string, seqid: number, ok: boolean): Buffer {
  // Apache Thrift writes it: a result whose field 0 is "ok", or an application exception.
  const msg = encodeCall('framed', 'binary', name, ok ? 'ok' : 'err', seqid, ok ? MT.REPLY : MT.EXCEPTION);
  return msg;
}

async function startBackend(script: (n: number) => BackendAct): Promise<ContractBackend> {
  let received = 0;
  let disconnects = 0;
  const held: (() => void)[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => {
      sockets.delete(s);
      disconnects++;
    });
    const r = new MessageReader({ framed: true, protocol: 'binary', maxMessageBytes: 1 << 20 });
    s.on('data', (d: Buffer) => {
      r.push(d);
      for (let m = r.next(); m !== undefined; m = r.next()) {
        const h = readMessageHeader('binary', m);
        if (h === undefined) continue;
        const act = script(received++);
        if (act === 'close') s.destroy();
        else if (act === 'hang') held.push(() => s.destroyed || s.write(answer(h.name, h.seqid, true)));
        else s.write(answer(h.name, h.seqid, act === 'ok'));
      }
    });
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  return {
    port: (server.address() as { port: number }).port,
    get received() {
      return received;
    },
    get disconnects() {
      return disconnects;
    },
    release: () => {
      for (const h of held.splice(0)) h();
    },
    close: () =>
      new Promise<void>((res) => {
        for (const s of sockets) s.destroy();
        server.close(() => res());
      }),
  };
}

/** A reply is a success; a TApplicationException ending `[PRX_ERR_…]` the router's failure, else the backend's. */
function outcome(r: Reply): Outcome {
  if (r.type === MT.REPLY) return { ok: true };
  const code = /\[(PRX_ERR_[A-Z0-9_]+)\]$/.exec(r.appException?.message ?? '')?.[1];
  return { ok: false, code: code ?? 'backend' };
}

const closed: Outcome = { ok: false, code: 'closed' };

protocolContract({
  protocol: 'thrift',
  startBackend,
  async startRouter(cfg, namers) {
    const rt = await startThriftRouter({ thriftMethodInDst: true, ...cfg }, { namers });
    return {
      port: rt.port,
      metric: (n) => rt.metric(n),
      async send(name) {
        const c = await ApacheClient.open(rt.port, 'framed', 'binary');
        try {
          return outcome(await c.call(name, 'x'));
        } catch {
          return closed;
        } finally {
          c.close();
        }
      },
      start(name) {
        const opened = ApacheClient.open(rt.port, 'framed', 'binary');
        return {
          outcome: opened.then((c) => c.call(name, 'x').then(outcome, () => closed)),
          abandon: () => void opened.then((c) => c.close()),
        };
      },
      close: (deadline) => rt.router.close(deadline),
    };
  },
  upstreamLostCodes: ['PRX_ERR_THRIFT_CONNECTION_CLOSED'],
  retryableResponses: false,
});
