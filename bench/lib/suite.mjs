// The frame of a benchmark suite that runs prx against direct targets with its roles as child
// processes (scripts/bench-grpc.mjs, scripts/bench-thrift.mjs): the options every such suite
// takes, the script's entry point, a run whose children and scratch folder go away on exit or a
// signal, bin/prx started and its output kept, a load run measured on prx (CPU per call, RSS), the
// full router stack both configure, and the suite's own section written into a Markdown file.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { cpuSeconds, rssMiB, withSection } from './procs.mjs';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
/** What the other suites take: accepted and ignored (`npm run bench` passes every argument to every suite). */
const OTHER_SUITES = ['conns', 'h2-conns', 'sections', 'harness', 'base-port', 'proxy-port', 'proxy-h2-port', 'admin-port', 'concurrency', 'rate', 'workers'];
/** The other suites' modes that are not benchmarks: this suite skips itself. */
const MODES = ['report', 'analyze', 'render-config'];

/**
 * `argv` parsed with the suite's `own` options (parseArgs specs) besides the common ones; returns
 * the parsed values and the common options read: rounds, duration, warmup, md, role, port, otherMode.
 */
export function suiteOptions(argv, own, { usageError, wholeNumber }) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        ...Object.fromEntries(['rounds', 'duration', 'warmup', 'md', 'role', 'port', ...OTHER_SUITES, ...MODES].map((k) => [k, { type: 'string' }])),
        json: { type: 'boolean', default: false },
        profile: { type: 'boolean', default: false },
        ...own,
      },
      strict: true,
    }).values;
  } catch (e) {
    usageError(e.message);
  }
  return {
    parsed,
    common: {
      rounds: wholeNumber('rounds', parsed.rounds, 1) ?? 3,
      duration: wholeNumber('duration', parsed.duration, 1) ?? 10,
      warmup: wholeNumber('warmup', parsed.warmup, 0) ?? 2,
      md: resolve(parsed.md ?? join(REPO, 'bench', 'results', 'latest.md')),
      role: parsed.role,
      port: wholeNumber('port', parsed.port, 1),
      otherMode: parsed.profile ? '--profile' : MODES.map((m) => (parsed[m] !== undefined ? `--${m}` : null)).find((m) => m !== null),
    },
  };
}

/** Runs `main` when `self` is the script node was started with: its number is the exit code. */
export function runMain(self, script, main) {
  if (process.argv[1] !== self) return;
  main().then(
    (code) => {
      if (code !== undefined) process.exit(code);
    },
    (e) => {
      process.stderr.write(`${script}: ${e?.stack ?? e}\n`);
      process.exit(1);
    },
  );
}

/** Fails with `usageError` when dist/ has not been built. */
export function requireDist(usageError) {
  if (!existsSync(join(REPO, 'dist', 'cli', 'prx.js'))) usageError('dist/ is missing: run `npm run build` first (npm run bench does)');
}

/**
 * Runs `body(scratch)` with a scratch folder; afterwards, or on SIGINT/SIGTERM, stops `children`
 * and removes the folder.
 */
export async function supervised(children, name, body) {
  const scratch = mkdtempSync(join(tmpdir(), `prx-${name}-`));
  const stop = async () => {
    await children.stopAll();
    rmSync(scratch, { recursive: true, force: true });
  };
  const onSignal = () => void stop().then(() => process.exit(130));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await body(scratch);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await stop();
  }
}

/** bin/prx with `config` (written into `scratch`) on `core`: the child and its recent output. */
export function startPrx(children, scratch, core, config) {
  const file = join(scratch, 'prx.yaml');
  writeFileSync(file, JSON.stringify(config, null, 2));
  const child = children.start(core, join(REPO, 'bin', 'prx'), [file], ['ignore', 'pipe', 'pipe']);
  let out = '';
  child.stdout.on('data', (c) => (out = (out + c).slice(-4000)));
  child.stderr.on('data', (c) => (out = (out + c).slice(-4000)));
  return { child, output: () => out };
}

/** `load()`'s result with prx's CPU per call over it (µs, by the calls the load made) and prx's RSS after it. */
export async function onPrx(prxPid, load) {
  const cpu0 = cpuSeconds(prxPid);
  const r = await load();
  const cpu1 = cpuSeconds(prxPid);
  r.cpuUsPerCall = cpu0 !== null && cpu1 !== null && r.total > 0 ? ((cpu1 - cpu0) * 1e6) / r.total : null;
  r.rssMiB = rssMiB(prxPid);
  return r;
}

/** The full router stack of the suites' prx configs (as the HTTP bench's bench/prx.yaml): retries with a budget, failure accrual over p2c. */
export const FULL_STACK = Object.freeze({
  service: {
    kind: 'io.prx.global',
    retries: { budget: { minRetriesPerSec: 10, percentCanRetry: 0.2, ttlSecs: 10 }, backoff: { kind: 'jittered', minMs: 10, maxMs: 100 } },
  },
  client: {
    kind: 'io.prx.global',
    loadBalancer: { kind: 'p2c' },
    failureAccrual: { kind: 'io.prx.consecutiveFailures', failures: 5, backoff: { kind: 'jittered', minMs: 5000, maxMs: 300000 } },
  },
});

/** Writes `section` (marked by `begin` and `end`) into the Markdown file `md`, replacing an earlier one. */
export function writeSection(md, section, begin, end) {
  mkdirSync(dirname(md), { recursive: true });
  writeFileSync(md, withSection(existsSync(md) ? readFileSync(md, 'utf8') : '', section, begin, end));
}
