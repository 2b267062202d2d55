// The router contract (test/router/contract.ts) against the real http router and HTTP backends.
import * as http from 'node:http';
import type { Socket } from 'node:net';
import { protocolContract, type Outcome } from './contract.js';
import { startBackend, startRouter } from './harness.js';

/** The core failure a proxy-made answer (one with `prx-err`) renders, read from Linkerd's message texts. */
function failureCode(message: string): string {
  if (message.startsWith('Unable to route request!')) return 'PRX_ERR_NO_BROKERS_AVAILABLE';
  if (/^Exceeded \S+ binding timeout/.test(message)) return 'PRX_ERR_BINDING_TIMEOUT';
  if (message.startsWith('Unable to establish connection to ')) return 'PRX_ERR_CONNECTION_FAILED';
  if (/^exceeded .* including retries/.test(message)) return 'PRX_ERR_TOTAL_TIMEOUT';
  if (/^exceeded .* excluding retries/.test(message)) return 'PRX_ERR_ATTEMPT_TIMEOUT';
  return 'PRX_ERR_UPSTREAM_FAILURE';
}

/** One GET for `Host: <name>` on its own connection; a 2xx succeeds. */
function start(port: number, name: string): { outcome: Promise<Outcome>; abandon(): void } {
  let req: http.ClientRequest | undefined;
  const outcome = new Promise<Outcome>((resolve) => {
    req = http.request({ host: '127.0.0.1', port, path: '/', headers: { host: name }, agent: false }, (res) => {
      res.resume();
      res.on('error', () => resolve({ ok: false, code: 'closed' }));
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        const err = res.headers['prx-err'];
        if (status >= 200 && status < 300) resolve({ ok: true });
        else resolve({ ok: false, code: typeof err === 'string' ? failureCode(decodeURIComponent(err.replace(/\+/g, ' '))) : 'backend' });
      });
    });
    req.on('error', () => resolve({ ok: false, code: 'closed' }));
    req.end();
  });
  return { outcome, abandon: () => req?.destroy() };
}

protocolContract({
  protocol: 'http',
  async startBackend(script) {
    const held: (() => void)[] = [];
    let n = 0;
    let disconnects = 0;
    const b = await startBackend('b', (req, res) => {
      req.resume();
      const act = script(n++);
      if (act === 'ok') res.end('ok');
      else if (act === 'err') res.writeHead(500).end('boom');
      else if (act === 'retryable') res.writeHead(503, { 'prx-retryable': 'true' }).end('again');
      else if (act === 'hang') held.push(() => res.end('ok'));
      else req.socket.destroy();
    });
    b.server.on('connection', (s: Socket) => s.once('close', () => disconnects++));
    return {
      port: b.port,
      get received() {
        return n;
      },
      get disconnects() {
        return disconnects;
      },
      release: () => {
        for (const h of held.splice(0)) h();
      },
      close: () => b.close(),
    };
  },
  async startRouter(cfg, namers) {
    const rt = await startRouter(cfg, { namers });
    return {
      port: rt.port,
      metric: (name) => rt.metric(name),
      send: (name) => start(rt.port, name).outcome,
      start: (name) => start(rt.port, name),
      close: async (deadline) => {
        await rt.router.close(deadline);
        rt.registry.close();
      },
    };
  },
  upstreamLostCodes: ['PRX_ERR_UPSTREAM_FAILURE'],
});
