#!/usr/bin/env node
// `npm run bench`: every benchmark suite prx has, in order. Suites are separate scripts so each
// runs in a fresh process (no JIT or heap state shared between them). Arguments go to every
// suite; each takes its own (`--json` for naming; `--rounds`, `--duration`, `--conns`, … for http).
//   naming  the naming engine alone (dtab parse, lookups, bind latency)
//   http    prx against direct, nginx, haproxy, node http-proxy and fastify through the shared
//           harness (../shared/bench or $PRX_BENCH_HARNESS), HTTP/1.1 then h2c (prx's h2 router
//           against haproxy and the fastify h2c proxy); skipped with a note when it is absent
//   grpc    grpc-js unary calls straight to a grpc-js server and through prx's h2 router,
//           interleaved rounds in the same run; its section goes into bench/results/latest.md
//   thrift  framed-binary thrift calls and mux dispatches straight to a backend, through a TCP
//           relay and through prx's thrift and mux routers, interleaved rounds; prx's RSS while a
//           16 MiB thrift call and reply pass; its section goes into bench/results/latest.md
//           With `--workers N` (default 2; 0 for none) the http suite adds a row of prx with
//           `workers: N` (its HTTP/1.1 rows again, CPU per request against the one-process row)
import { spawnSync } from 'node:child_process';

const suites = ['scripts/bench-naming.mjs', 'scripts/bench-http.mjs', 'scripts/bench-grpc.mjs', 'scripts/bench-thrift.mjs'];
const args = process.argv.slice(2);
if (!args.some((a) => a === '--workers' || a.startsWith('--workers='))) args.push('--workers', '2');
for (const s of suites) {
  const r = spawnSync(process.execPath, [s, ...args], { stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
