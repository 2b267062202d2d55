import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApertureBalancer, balancerFromConfig, type Balancer } from '../../src/service/balancer/index.js';
import type { TestNode} from './helpers.js';
import { TestClock, nodes, pickCounts, seeded } from './helpers.js';

function aperture(clock: TestClock, extra: Record<string, unknown> = {}, seed = 21): ApertureBalancer<TestNode> {
  const b: Balancer<TestNode> = balancerFromConfig({ kind: 'aperture', ...extra }, { random: seeded(seed), now: clock.read })<TestNode>();
  assert.ok(b instanceof ApertureBalancer);
  return b as ApertureBalancer<TestNode>;
}

/** One request at a time, each taking half of `stepMs`: no load builds up. */
function idlePicks(b: Balancer<TestNode>, clock: TestClock, count: number, stepMs = 100): Set<string> {
  const seen = new Set<string>();
  for (let i = 0; i < count; i++) {
    clock.now += stepMs / 2;
    const n = b.pick() as TestNode;
    seen.add(n.key);
    n.load++;
    clock.now += stepMs / 2;
    n.load--;
    b.observe(n, stepMs / 2, false);
  }
  return seen;
}

describe('aperture', () => {
  it('keeps light traffic on a window of minAperture nodes', () => {
    const clock = new TestClock();
    const b = aperture(clock);
    b.update(nodes(...Array<number>(10).fill(1)));
    assert.equal(b.aperture, 1);
    assert.equal(idlePicks(b, clock, 200).size, 1);
    const wide = aperture(clock, { minAperture: 3 });
    wide.update(nodes(...Array<number>(10).fill(1)));
    assert.equal(idlePicks(wide, clock, 500).size, 3);
  });

  it('grows the window under load, up to every node, and shrinks it when load falls', () => {
    const clock = new TestClock();
    const b = aperture(clock);
    b.update(nodes(...Array<number>(6).fill(1)));
    const inFlight: TestNode[] = [];
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      clock.now += 100;
      const n = b.pick() as TestNode;
      n.load++;
      inFlight.push(n);
      seen.add(n.key);
    }
    assert.equal(b.aperture, 6, 'window widened to the whole set');
    assert.equal(seen.size, 6);
    for (const n of inFlight) {
      clock.now += 100;
      n.load--;
      b.observe(n, 1, false);
    }
    idlePicks(b, clock, 300, 1000);
    assert.equal(b.aperture, 1, 'window back to minAperture');
  });

  it('widens by steps as smoothed load per node crosses highLoad', () => {
    const clock = new TestClock();
    const b = aperture(clock, { highLoad: 2, lowLoad: 0.5, smoothWindowMs: 1 });
    b.update(nodes(...Array<number>(10).fill(1)));
    // With a 1 ms smoothing window and 1 s steps the smoothed load is the current one.
    const widths: number[] = [];
    for (let i = 0; i < 8; i++) {
      clock.now += 1000;
      (b.pick() as TestNode).load++;
      widths.push(b.aperture);
    }
    // Outstanding 1, 2 (2/1 ≥ 2: widen), 3, 4 (4/2: widen), 5, 6 (6/3: widen), 7, 8 (8/4: widen)
    assert.deepEqual(widths, [1, 2, 2, 3, 3, 4, 4, 5]);
  });

  it('smooths load over time: a burst within one instant does not widen the window', () => {
    const clock = new TestClock();
    const b = aperture(clock, { smoothWindowMs: 5000 });
    b.update(nodes(...Array<number>(10).fill(1)));
    clock.now = 1000;
    b.pick();
    for (let i = 0; i < 20; i++) b.pick(); // no time passes: the average does not move
    assert.equal(b.aperture, 1);
  });

  it('draws within the window by weight and load', () => {
    const clock = new TestClock();
    const b = aperture(clock, { minAperture: 2 });
    const set = nodes(1, 1, 1, 1);
    b.update(set);
    const window = [...idlePicks(b, clock, 200)];
    assert.equal(window.length, 2);
    const busy = set.find((n) => n.key === window[0]) as TestNode;
    busy.load = 5;
    const counts = pickCounts(b, 50);
    assert.deepEqual([...counts.keys()], [window[1]]);
  });

  it('ranks nodes by key, so the window survives reordering; other seeds pick other windows', () => {
    const clock = new TestClock();
    const b = aperture(clock);
    const set = nodes(...Array<number>(10).fill(1));
    b.update(set);
    const [first] = idlePicks(b, clock, 5);
    b.update([...set].reverse());
    assert.deepEqual([...idlePicks(b, clock, 50)], [first]);
    const windows = new Set<string>();
    for (let seed = 1; seed <= 20; seed++) {
      const other = aperture(clock, {}, seed);
      other.update(set);
      windows.add([...idlePicks(other, clock, 3)][0] as string);
    }
    assert.ok(windows.size >= 4, `windows over 20 seeds: ${windows.size}`);
  });

  it('moves the window onto live nodes when a node in it is unavailable', () => {
    const clock = new TestClock();
    const b = aperture(clock);
    const set = nodes(...Array<number>(8).fill(1));
    b.update(set);
    const [first] = idlePicks(b, clock, 5);
    (set.find((n) => n.key === first) as TestNode).available = false;
    const next = idlePicks(b, clock, 100);
    assert.equal(next.size, 1, 'still a one-node window');
    assert.ok(!next.has(first as string));
  });

  it('rejects lowLoad ≥ highLoad', () => {
    assert.throws(() => balancerFromConfig({ kind: 'aperture', lowLoad: 2, highLoad: 2 }), /lowLoad: must be less than highLoad \(2\), got 2/);
  });
});
