import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import type { Admin } from '../../src/admin/index.js';
import { ProfileMessage } from '../../src/admin/pprof/profile-proto.js';
import { request, startAdmin } from './helpers.js';

const T = { timeout: 20_000 };

interface Decoded {
  sampleType: { type: number; unit: number }[];
  sample: { locationId: number[]; value: number[] }[];
  location: { id: number; line: { functionId: number; line: number }[] }[];
  function: { id: number; name: number; filename: number }[];
  stringTable: string[];
  timeNanos: number;
  durationNanos: number;
  periodType: { type: number; unit: number };
  period: number;
  defaultSampleType: number;
}

async function fetchProfile(url: string): Promise<Decoded> {
  const res = await fetch(url, { signal: AbortSignal.timeout(15_000) });
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal(res.headers.get('content-type'), 'application/octet-stream');
  const gz = Buffer.from(await res.arrayBuffer());
  assert.deepEqual([...gz.subarray(0, 2)], [0x1f, 0x8b], 'gzip magic');
  const message = ProfileMessage.decode(gunzipSync(gz));
  return ProfileMessage.toObject(message, { longs: Number, arrays: true, defaults: true }) as Decoded;
}

const types = (p: Decoded): string[][] =>
  p.sampleType.map((t) => [p.stringTable[t.type] ?? '?', p.stringTable[t.unit] ?? '?']);

/** Every function name appearing in some sample's stack. */
function sampledFunctionNames(p: Decoded): Set<string> {
  const locations = new Map(p.location.map((l) => [l.id, l]));
  const functions = new Map(p.function.map((f) => [f.id, f]));
  const names = new Set<string>();
  for (const s of p.sample) {
    for (const id of s.locationId) {
      for (const line of locations.get(id)?.line ?? []) names.add(p.stringTable[functions.get(line.functionId)?.name ?? 0] ?? '');
    }
  }
  return names;
}

// Busy work the profiles must find by name, in chunks with yields so that the admin server (same
// process) can start and finish the profile.
function spinForProfile(ms: number): number {
  const end = performance.now() + ms;
  let x = 0;
  while (performance.now() < end) x += Math.sqrt(x + 1);
  return x;
}

// V8 may inline a function into its caller, and the CPU profiler then shows no frame for it. A
// call site that has seen more than four targets is megamorphic and never inlines, so the spinner
// is always called from one.
const callees: ((ms: number) => number)[] = [(ms) => ms, (ms) => ms + 1, (ms) => ms + 2, (ms) => ms + 3, spinForProfile];

async function busyFor(totalMs: number, chunkMs: number, pauseMs = 0): Promise<void> {
  // Let the admin request reach the profiler first: on a loaded machine it can take a while.
  await new Promise((r) => setTimeout(r, 150));
  const end = Date.now() + totalMs;
  while (Date.now() < end) {
    for (const callee of callees) callee(chunkMs);
    await new Promise((r) => setTimeout(r, pauseMs));
  }
}

const retained: unknown[] = [];
function allocateForHeapProfile(n: number): void {
  for (let i = 0; i < n; i++) retained.push({ index: i, payload: new Array(64).fill(i) });
}

describe('pprof endpoints', () => {
  let admin: Admin;
  before(async () => {
    admin = await startAdmin();
  });
  after(() => admin.close());

  test('/admin/pprof/profile: a CPU profile in gzipped pprof that finds the busy function', T, async () => {
    const started = Date.now();
    const profile = fetchProfile(`${admin.url}/admin/pprof/profile?seconds=1&hz=200`);
    await busyFor(1500, 20);
    const p = await profile;

    assert.equal(p.stringTable[0], '', 'pprof requires an empty first string');
    assert.deepEqual(types(p), [['samples', 'count'], ['cpu', 'nanoseconds']]);
    assert.deepEqual([p.stringTable[p.periodType.type], p.stringTable[p.periodType.unit]], ['cpu', 'nanoseconds']);
    assert.equal(p.period, 5_000_000, '1e9 / hz');
    assert.equal(p.stringTable[p.defaultSampleType], 'cpu');
    const samples = p.sample.reduce((n, s) => n + (s.value[0] ?? 0), 0);
    assert.ok(samples > 50, `samples: ${samples}`);
    assert.ok(p.stringTable.includes('spinForProfile'), 'the busy function is named');
    assert.ok(sampledFunctionNames(p).has('spinForProfile'), 'the busy function is sampled');
    assert.ok(!sampledFunctionNames(p).has('(idle)'), 'idle time is not CPU time');
    assert.ok(p.durationNanos >= 0.9e9 && p.durationNanos < 5e9, `duration ${p.durationNanos}`);
    assert.ok(Math.abs(p.timeNanos / 1e6 - started) < 2000, 'time_nanos is the wall-clock start');
    // Every sample references existing locations and every location an existing function.
    const locationIds = new Set(p.location.map((l) => l.id));
    const functionIds = new Set(p.function.map((f) => f.id));
    for (const s of p.sample) for (const id of s.locationId) assert.ok(locationIds.has(id), 'location exists');
    for (const l of p.location) for (const line of l.line) assert.ok(functionIds.has(line.functionId), 'function exists');
  });

  test('/admin/pprof/contention: only samples taken while the loop was blocked, weighted by delay', T, async () => {
    // Once the CPU-profile test has warmed it up, V8 may inline spinForProfile into busyFor: the
    // blocking code is then sampled under busyFor's name. Sampling can also miss on a loaded
    // machine, so up to three runs.
    const blockers = (q: Decoded): boolean => sampledFunctionNames(q).has('spinForProfile') || sampledFunctionNames(q).has('busyFor');
    let p!: Decoded;
    for (let attempt = 0; attempt < 3; attempt++) {
      const profile = fetchProfile(`${admin.url}/admin/pprof/contention?seconds=1`);
      // Blocks of 60 ms with room between them for timers to notice.
      await busyFor(1500, 60, 20);
      p = await profile;
      if (blockers(p)) break;
    }

    assert.deepEqual(types(p), [['samples', 'count'], ['delay', 'nanoseconds']]);
    assert.equal(p.period, 10_000_000, 'default 100 Hz');
    const samples = p.sample.reduce((n, s) => n + (s.value[0] ?? 0), 0);
    const delayNs = p.sample.reduce((n, s) => n + (s.value[1] ?? 0), 0);
    assert.ok(samples > 0, 'samples while blocked');
    assert.ok(delayNs > 100e6 && delayNs < 1.5e9, `delay ${delayNs}`);
    assert.ok(blockers(p), 'the blocking function is sampled');
    assert.match(p.stringTable.find((s) => s.startsWith('event-loop blocked periods')) ?? '', /: \d+$/);
  });

  test('/admin/pprof/heap: live sampled allocations in objects and bytes', T, async () => {
    const profile = fetchProfile(`${admin.url}/admin/pprof/heap?seconds=0.5&interval=4096`);
    await new Promise((r) => setTimeout(r, 50));
    allocateForHeapProfile(20_000);
    const p = await profile;

    assert.deepEqual(types(p), [['objects', 'count'], ['space', 'bytes']]);
    assert.equal(p.period, 4096);
    assert.ok(sampledFunctionNames(p).has('allocateForHeapProfile'));
    const bytes = p.sample.reduce((n, s) => n + (s.value[1] ?? 0), 0);
    assert.ok(bytes > 1_000_000, `sampled bytes ${bytes}`); // 20k arrays of 64 slots
  });

  test('one profile at a time: a concurrent request gets 409', T, async () => {
    const first = fetchProfile(`${admin.url}/admin/pprof/profile?seconds=0.5`);
    await new Promise((r) => setTimeout(r, 100));
    const second = await request(`${admin.url}/admin/pprof/heap?seconds=0.1`);
    assert.equal(second.status, 409);
    assert.equal(second.text, 'a profile is already being taken; try again when it is done\n');
    await first;
    // The lock is released afterwards.
    const third = await fetchProfile(`${admin.url}/admin/pprof/profile?seconds=0.1`);
    assert.equal(third.stringTable[0], '');
  });

  test('bad parameters are 400', T, async () => {
    const tooLong = await request(`${admin.url}/admin/pprof/profile?seconds=3600`);
    assert.equal(tooLong.status, 400);
    assert.equal(tooLong.text, "seconds must be a number between 0.001 and 60, got '3600'\n");
    const badHz = await request(`${admin.url}/admin/pprof/contention?hz=abc`);
    assert.equal(badHz.status, 400);
    assert.match(badHz.text, /^hz must be a number/);
  });

  test('a client that goes away stops the profile and frees the profiler', T, async () => {
    const ac = new AbortController();
    const gone = fetch(`${admin.url}/admin/pprof/profile?seconds=30`, { signal: ac.signal }).catch(() => 'aborted');
    await new Promise((r) => setTimeout(r, 100));
    ac.abort();
    assert.equal(await gone, 'aborted');
    await new Promise((r) => setTimeout(r, 100));
    const next = await fetchProfile(`${admin.url}/admin/pprof/profile?seconds=0.1`);
    assert.equal(next.stringTable[0], '');
  });
});
