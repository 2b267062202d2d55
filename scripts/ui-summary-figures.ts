// The cost of one dashboard poll (`/admin/summary.json`) with many clients: builds the body and
// serializes it as the endpoint does, N times, and reports CPU per poll and the body size.
//   node --import tsx scripts/ui-summary-figures.ts [clients=500] [polls=2000]
import { spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { Admin } from '../src/admin/index.js';
import { registerProxyUi } from '../src/admin/ui/index.js';
import { buildSummary, LayoutTracker } from '../src/admin/ui/summary.js';
import { LogRegistry } from '../src/core/log.js';
import { MetricsRegistry } from '../src/service/stats/index.js';
import { renderMetricsJson } from '../src/telemetry/metrics-json.js';

const clients = Number(process.argv[2] ?? 500);
const polls = Number(process.argv[3] ?? 2000);
const registry = new MetricsRegistry();
const rt = registry.stats.scope('rt', 'http');
for (let i = 0; i < clients; i++) {
  const c = rt.scope('client', `#/io.prx.fs/service-${i}`);
  for (const name of ['requests', 'success', 'failures']) c.counter(name).incr(1000 + i);
  c.counter('retries', 'requeues').incr(3);
  c.counter('failure_accrual', 'removals').incr(1);
  c.gauge(['loadbalancer', 'size'], () => 3);
  c.gauge(['loadbalancer', 'available'], () => 3);
  c.gauge(['connections'], () => 2);
  c.gauge(['pending'], () => 0);
  const h = c.stat('request_latency_ms');
  for (let v = 0; v < 200; v++) h.add(v % 50);
  const s = rt.scope('service', `svc/service-${i}`);
  s.counter('requests').incr(1000);
  s.counter('retries', 'total').incr(2);
  s.counter('retries', 'budget_exhausted').incr(0);
}
const server = rt.scope('server', '127.0.0.1/4140');
for (const name of ['requests', 'success', 'failures']) server.counter(name).incr(5000);
const fresh = process.argv[4] === 'fresh'; // `fresh`: no completed histogram interval yet (latencies from live buckets)
if (!fresh) registry.snapshotHistograms();
const options = { registry, routers: () => [{ label: 'http', protocol: 'http' }], version: 'x', eventLoopUtilization: () => 0.1 };
const tracker = new LayoutTracker();
let layout = 0;
let bytes = 0;
for (let i = 0; i < 50; i++) layout = buildSummary(options, tracker, layout).layout; // warm up
const start = process.cpuUsage();
for (let i = 0; i < polls; i++) {
  const body = JSON.stringify(buildSummary(options, tracker, layout));
  bytes = body.length;
}
const used = process.cpuUsage(start);
const firstBytes = JSON.stringify(buildSummary(options, new LayoutTracker(), 0)).length;
const perPollMs = (used.user + used.system) / 1000 / polls;
// The worst single poll: with fresh histograms, the one that rescans every client's buckets.
let worst = 0;
for (let i = 0; i < 20; i++) {
  const t0 = process.cpuUsage();
  JSON.stringify(buildSummary(options, tracker, layout));
  const t = process.cpuUsage(t0);
  worst = Math.max(worst, (t.user + t.system) / 1000);
  const until = Date.now() + 300;
  while (Date.now() < until) {
    // let the reuse window pass between some polls
  }
}
process.stdout.write(`${fresh ? 'fresh histograms, ' : ''}${clients} clients: worst single poll ${worst.toFixed(3)} ms\n`);
process.stdout.write(`${clients} clients: ${perPollMs.toFixed(3)} ms CPU per poll (build + JSON), body ${bytes} B (${firstBytes} B with the layout)\n`);
// For comparison: what Linkerd's dashboard polled, the whole metrics tree.
const treeStart = process.cpuUsage();
let treeBytes = 0;
for (let i = 0; i < polls / 10; i++) treeBytes = renderMetricsJson(registry, { tree: true }).body.length;
const tree = process.cpuUsage(treeStart);
process.stdout.write(`  (metrics.json?tree=1: ${((tree.user + tree.system) / 1000 / (polls / 10)).toFixed(3)} ms per poll, ${treeBytes} B)\n`);

// End to end: the admin server answering /admin/summary.json to another process, which polls
// `polls / 4` times back to back; this process's CPU over that run, per poll.
const logs = new LogRegistry({ destination: new Writable({ write: (_c, _e, done) => done() }) });
const admin = new Admin({ ip: '127.0.0.1', port: 0, logs, logger: logs.get('prx.admin') });
registerProxyUi(admin, { registry, routers: () => [{ label: 'http', protocol: 'http', dtab: '', dstPrefix: '/svc' }], version: 'x' });
const { port } = await admin.listen();
const n = Math.round(polls / 4);
const poller = `let l=0;for(let i=0;i<${n};i++){const r=await fetch('http://127.0.0.1:${port}/admin/summary.json?layout='+l);l=(await r.json()).layout;}`;
const httpStart = process.cpuUsage();
await new Promise<void>((resolve, reject) => {
  const child = spawn(process.execPath, ['--input-type=module', '-e', poller], { stdio: 'inherit' });
  child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`poller exited ${code}`))));
});
const http = process.cpuUsage(httpStart);
process.stdout.write(`  over HTTP: ${((http.user + http.system) / 1000 / n).toFixed(3)} ms of admin-process CPU per poll (${n} polls)\n`);
await admin.close();
registry.close();
