// The router contract (test/router/contract.ts) against the echo router and echo backends.
import { protocolContract, type Outcome } from '../contract.js';
import { echo, EchoConn, startEchoBackend, startEchoRouter } from './echo-harness.js';

/** `OK …` succeeds; `ERR <CODE> …` is the router's own failure; any other `ERR` the backend's. */
function outcome(line: string): Outcome {
  if (line === 'OK' || line.startsWith('OK ')) return { ok: true };
  const code = /^ERR ([A-Z][A-Z0-9_]+)\b/.exec(line)?.[1];
  return { ok: false, code: code ?? (line.startsWith('ERR ') ? 'backend' : line) };
}

protocolContract({
  protocol: 'echo',
  async startBackend(script) {
    const b = await startEchoBackend('b', (n) => script(n));
    return {
      port: b.port,
      get received() {
        return b.lines.length;
      },
      get disconnects() {
        return b.disconnects;
      },
      release: () => b.release(),
      close: () => b.close(),
    };
  },
  async startRouter(cfg, namers) {
    const rt = await startEchoRouter(cfg, { namers });
    return {
      port: rt.port,
      metric: (n) => rt.metric(n),
      send: async (name) => outcome(await echo(rt.port, `${name} x`)),
      start(name) {
        const c = new EchoConn(rt.port);
        return { outcome: c.send(`${name} x`).then(outcome), abandon: () => c.close() };
      },
      close: (deadline) => rt.close(deadline),
    };
  },
  upstreamLostCodes: ['PRX_ERR_ECHO_UPSTREAM_CLOSED', 'ECONNRESET'],
});
