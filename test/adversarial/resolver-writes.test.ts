// Attacks on the resolver's dtab writes: If-Match values that are near misses of the current
// ETag must not pass as it (PUT and DELETE), malformed ones are 400, and a race of writers holding
// one version lets exactly one through. The attacks take a controller's base URL, so any resolver
// (this one over another store, a future one) can be run through them.
import '../../src/resolver/builtins.js';
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { pino } from 'pino';
import { lookupKind } from '../../src/config/registry.js';
import { NullStatsReceiver } from '../../src/service/stats/index.js';
import { openDtabStore } from '../../src/resolver/storage/index.js';
import type { DtabStore } from '../../src/resolver/storage/types.js';
import { type ControllerFixture, request, startController } from '../resolver/helpers.js';
import { FakeConsul } from '../resolver/storage/fake-consul.js';

/** The namespace's dtab text and ETag as the controller shows them (undefined when absent). */
export async function current(base: string, ns: string): Promise<{ text: string; etag: string } | undefined> {
  const r = await request(`${base}/api/1/dtabs/${ns}`, { headers: { accept: 'application/dtab' } });
  if (r.status === 404) return undefined;
  assert.equal(r.status, 200, r.text);
  return { text: r.text, etag: r.headers.get('etag') ?? '' };
}

/** One conditional write: PUT of `body`, or DELETE, with `If-Match: ifMatch`. */
export async function conditional(base: string, ns: string, method: 'PUT' | 'DELETE', ifMatch: string, body = '/a => /b'): Promise<number> {
  const init: RequestInit =
    method === 'PUT' ? { method, body, headers: { 'content-type': 'application/dtab', 'if-match': ifMatch } } : { method, headers: { 'if-match': ifMatch } };
  return (await request(`${base}/api/1/dtabs/${ns}`, init)).status;
}

/** If-Match values that are not the ETag `etag` but look like it, each with the status it must get. */
export function nearMisses(etag: string): readonly (readonly [string, 412 | 400])[] {
  return [
    [`${etag}x`, 412],
    [etag.replace(/=+$/, ''), 412],
    [`A${etag}`, 412],
    [`${etag.slice(0, 4)}!${etag.slice(4)}`, 412],
    ['garbage!!', 412],
    [`W/"${etag}"`, 412], // If-Match compares strongly: a weak tag matches nothing
    [`"${etag}x"`, 412],
    [`"${etag}`, 400], // unterminated
    [`${etag}"`, 400],
    [`"${etag}" "${etag}"`, 400], // no comma
    [`${etag} ${etag}`, 400],
    [`${etag}, other`, 400], // a bare version is namerd's form, only ever the whole value
    [`"other", ${etag}`, 400],
    [`*, ${etag}`, 400], // `*` only alone
    [',', 400],
    [Array.from({ length: 17 }, (_, i) => `"t${i}"`).join(', '), 400],
  ];
}

/** `n` writers race with the same version: the statuses they got, sorted. */
export async function raceFromOneVersion(base: string, ns: string, method: 'PUT' | 'DELETE', etag: string, n = 50): Promise<number[]> {
  const statuses = await Promise.all(Array.from({ length: n }, (_, i) => conditional(base, ns, method, etag, `/a => /w${i}`)));
  return statuses.sort((a, b) => a - b);
}

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

function open(raw: Record<string, unknown>): DtabStore {
  const def = lookupKind('storage', String(raw['kind']));
  assert.ok(def);
  return openDtabStore(def.schema.parse(raw) as { kind: string }, { log: pino({ level: 'silent' }), stats: NullStatsReceiver });
}

const stores: Record<string, () => Promise<DtabStore>> = {
  'io.prx.inMemory': () => Promise.resolve(open({ kind: 'io.prx.inMemory' })),
  'io.prx.kvstore (fake Consul: compare-and-set in the backend)': async () => {
    const consul = await new FakeConsul().start();
    cleanups.push(() => consul.stop());
    return open({ kind: 'io.prx.kvstore', host: '127.0.0.1', port: consul.port });
  },
};

/** Creates `ns` and waits until the controller shows it (stores apply writes through their watch). */
async function seeded(fx: ControllerFixture, ns: string): Promise<{ text: string; etag: string }> {
  const r = await request(`${fx.url}/api/1/dtabs/${ns}`, { method: 'POST', body: '/a => /seed', headers: { 'content-type': 'application/dtab' } });
  assert.equal(r.status, 204, r.text);
  const deadline = Date.now() + 10_000;
  for (;;) {
    const c = await current(fx.url, ns);
    if (c !== undefined) return c;
    if (Date.now() > deadline) assert.fail(`${ns} never shown`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

for (const [name, make] of Object.entries(stores)) {
  describe(`resolver writes over ${name}`, () => {
    let fx: ControllerFixture;
    let seq = 0;
    const fresh = async (): Promise<{ ns: string; text: string; etag: string }> => {
      fx ??= await startController({}, { store: await make() }).then((f) => (cleanups.push(() => f.close()), f));
      const ns = `w${++seq}`;
      return { ns, ...(await seeded(fx, ns)) };
    };

    for (const method of ['PUT', 'DELETE'] as const) {
      test(`${method}: near misses of the ETag are 412, malformed If-Match 400, and nothing changes`, async () => {
        const { ns, text, etag } = await fresh();
        const got = [];
        for (const [value, want] of nearMisses(etag)) got.push([value, await conditional(fx.url, ns, method, value), want]);
        assert.deepEqual(
          got.filter(([, status, want]) => status !== want),
          [],
          'If-Match values that got the wrong status',
        );
        assert.deepEqual(await current(fx.url, ns), { text, etag });
      });

      test(`${method}: the exact ETag, bare or quoted, in a quoted list, or * matches`, async () => {
        for (const form of [(e: string) => e, (e: string) => `"${e}"`, (e: string) => `"other", "${e}"`, () => '*']) {
          const { ns, etag } = await fresh();
          assert.equal(await conditional(fx.url, ns, method, form(etag), '/a => /next'), 204, form(etag));
          const after = await current(fx.url, ns);
          if (method === 'DELETE') assert.equal(after, undefined);
          else assert.notEqual(after?.etag, etag);
        }
      });

      test(`${method}: a stale version is 412; an absent namespace 404`, async () => {
        const { ns, etag } = await fresh();
        assert.equal(await conditional(fx.url, ns, 'PUT', etag, '/a => /newer'), 204);
        assert.equal(await conditional(fx.url, ns, method, etag), 412);
        assert.equal(await conditional(fx.url, 'never-created', method, etag), 404);
        assert.equal(await conditional(fx.url, 'never-created', method, 'garbage!!'), 404);
      });

      test(`${method}: 50 concurrent writers holding one version: exactly one wins`, async () => {
        const { ns, etag } = await fresh();
        const statuses = await raceFromOneVersion(fx.url, ns, method, etag);
        assert.equal(statuses.filter((s) => s === 204).length, 1, `statuses: ${statuses.join(',')}`);
        // The losers are told the version moved on (or, after a delete, that nothing is there).
        assert.deepEqual(statuses.filter((s) => s !== 204 && s !== 412 && !(method === 'DELETE' && s === 404)), []);
      });
    }
  });
}
