import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { z } from 'zod';
import {
  choice,
  dataSize,
  dtabText,
  ip,
  kindSlot,
  numberInRange,
  oneOrMany,
  parseDataSize,
  pathPattern,
  pathText,
  port,
  regexText,
  validate,
} from '../../src/config/index.js';
import { configErrorOf } from './fixtures.js';

/** The issue lines of validating `raw` against `schema` placed under key `x`. */
function linesOf(schema: z.ZodType, raw: unknown): string[] {
  return configErrorOf(() => validate(z.strictObject({ x: schema }), { x: raw })).lines;
}

describe('scalars', () => {
  it('port: an integer from 1 to 65535', () => {
    assert.equal(validate(port, 65535), 65535);
    assert.deepEqual(linesOf(port, 0), ['x: expected an integer from 1 to 65535, got 0']);
    assert.deepEqual(linesOf(port, 80.5), ['x: expected an integer from 1 to 65535, got 80.5']);
    assert.deepEqual(linesOf(port, '80'), ['x: expected an integer from 1 to 65535, got "80"']);
    assert.deepEqual(linesOf(port, undefined), ['x: required key is missing']);
  });

  it('numberInRange names both bounds', () => {
    assert.deepEqual(linesOf(numberInRange(0, 1), 1.5), ['x: expected a number from 0 to 1, got 1.5']);
  });

  it('ip: an address literal or a host name', () => {
    for (const ok of ['0.0.0.0', '::1', 'fe80::1', 'localhost', 'svc-1.ns.cluster.local']) assert.equal(validate(ip, ok), ok);
    assert.deepEqual(linesOf(ip, '-bad-.example'), ['x: expected an IP address or host name, got "-bad-.example"']);
    assert.deepEqual(linesOf(ip, ''), ['x: expected an IP address or host name, got ""']);
  });

  it("pathText: canonical form, or the parser's message", () => {
    assert.equal(validate(pathText, '/#/io.prx.fs'), '/#/io.prx.fs');
    assert.deepEqual(linesOf(pathText, 'svc/users'), ["x: invalid path: '/' expected but 's' found at '[s]vc/users'"]);
  });

  it("dtabText: canonical form, or the parser's message with the [x] marker", () => {
    assert.equal(validate(dtabText, '/svc => /#/io.prx.fs ;\n/a=>/b'), '/svc=>/#/io.prx.fs;/a=>/b');
    assert.deepEqual(linesOf(dtabText, '/svc => /#/io.prx.fs; /x'), [
      "x: invalid dtab: '=' expected but end of input found at '/svc => /#/io.prx.fs; /x[]'",
    ]);
  });

  it('pathPattern: wildcards and capture variables', () => {
    for (const ok of ['/', '/svc/*', '/#/io.prx.fs/{service}', '/svc/{a}-{b}.x']) assert.equal(validate(pathPattern, ok), ok);
    assert.deepEqual(linesOf(pathPattern, '/svc/{open'), [
      'x: invalid prefix pattern: segment 2 ("{open") must be "*" or text with {name} captures, got "/svc/{open"',
    ]);
    assert.deepEqual(linesOf(pathPattern, '/svc//x'), [
      'x: invalid prefix pattern: segment 2 ("") must be "*" or text with {name} captures, got "/svc//x"',
    ]);
  });

  it('regexText: must compile', () => {
    assert.equal(validate(regexText, '^/admin/(metrics|ping)$'), '^/admin/(metrics|ping)$');
    assert.deepEqual(linesOf(regexText, '[a-'), ['x: invalid regular expression: Unterminated character class, got "[a-"']);
  });
});

describe('plain zod schemas (as plugins write them)', () => {
  it('get operator messages too', () => {
    const schema = z.strictObject({
      n: z.int().min(0),
      f: z.number().max(1),
      s: z.string().min(1),
      l: z.array(z.string()).min(1),
      e: z.enum(['a', 'b']),
      o: z.strictObject({}),
    });
    const raw = { n: 1.5, f: 2, s: '', l: [], e: 'c', o: { k: 1 } };
    assert.deepEqual(configErrorOf(() => validate(schema, raw)).lines, [
      'n: expected an integer, got 1.5',
      'f: must be at most 1, got 2',
      's: must not be empty, got ""',
      'l: must not be empty',
      'e: expected one of "a", "b", got "c"',
      'o.k: unknown key (no keys are allowed here)',
    ]);
  });
});

describe('dataSize', () => {
  it('parses <n>.<unit> in binary units, singular or plural', () => {
    assert.equal(validate(dataSize, '3.megabytes'), 3 * 1024 * 1024);
    assert.equal(validate(dataSize, '1.gigabyte'), 1024 ** 3);
    assert.equal(validate(dataSize, '512.kilobytes'), 512 * 1024);
    assert.equal(validate(dataSize, '100.bytes'), 100);
    assert.equal(validate(dataSize, 4096), 4096);
  });

  it('rejects other forms with an example of the right one', () => {
    const message = 'expected a data size such as 512.kilobytes, 3.megabytes or 1.gigabyte, or a number of bytes';
    assert.deepEqual(linesOf(dataSize, '3MB'), [`x: ${message}, got "3MB"`]);
    assert.deepEqual(linesOf(dataSize, '1.5.megabytes'), [`x: ${message}, got "1.5.megabytes"`]);
    assert.deepEqual(linesOf(dataSize, -1), [`x: ${message}, got -1`]);
    assert.deepEqual(linesOf(dataSize, true), [`x: ${message}, got true`]);
    assert.deepEqual(linesOf(dataSize, undefined), ['x: required key is missing']);
  });

  it('scales every unit by powers of 1024', () => {
    const units = ['byte', 'kilobyte', 'megabyte', 'gigabyte'] as const;
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1_000_000 }), fc.integer({ min: 0, max: 3 }), fc.boolean(), (n, u, plural) => {
        const text = `${n}.${units[u]}${plural ? 's' : ''}`;
        assert.equal(parseDataSize(text), n * 1024 ** u);
      }),
    );
  });
});

describe('kindSlot', () => {
  it('lists the registered kinds, or says none are registered', () => {
    assert.deepEqual(linesOf(kindSlot('loadBalancer'), { kind: 'roundRobin' }), [
      'x.kind: unknown loadBalancer kind "roundRobin" (known kinds: ewma, p2c)',
    ]);
    assert.deepEqual(linesOf(kindSlot('storage'), { kind: 'io.prx.inMemory' }), [
      'x.kind: unknown storage kind "io.prx.inMemory" (no storage kinds are registered)',
    ]);
  });

  it('requires an object with a string kind', () => {
    assert.deepEqual(linesOf(kindSlot('loadBalancer'), 'p2c'), ['x: expected an object, got "p2c"']);
    assert.deepEqual(linesOf(kindSlot('loadBalancer'), {}), ['x.kind: required key is missing (known kinds: ewma, p2c)']);
    assert.deepEqual(linesOf(kindSlot('loadBalancer'), { kind: 2 }), ['x.kind: expected a string, got 2']);
  });

  it("validates with the kind's schema, filling its defaults", () => {
    assert.deepEqual(validate(kindSlot('loadBalancer'), { kind: 'p2c' }), { kind: 'p2c', maxEffort: 5 });
    assert.deepEqual(linesOf(kindSlot('loadBalancer'), { kind: 'p2c', maxEffort: 0, extra: 1 }), [
      'x.maxEffort: expected a positive integer, got 0',
      'x.extra: unknown key (known keys: kind, experimental, maxEffort)',
    ]);
  });

  it('uses the default kind when absent', () => {
    const schema = z.strictObject({ lb: kindSlot('loadBalancer', { default: { kind: 'p2c' } }) });
    assert.deepEqual(validate(schema, {}), { lb: { kind: 'p2c', maxEffort: 5 } });
    assert.deepEqual(configErrorOf(() => validate(z.strictObject({ lb: kindSlot('loadBalancer') }), {})).lines, [
      'lb: required key is missing',
    ]);
  });

  it('gates experimental kinds on experimental: true', () => {
    const e = configErrorOf(() => validate(kindSlot('telemeter'), { kind: 'io.prx.udpstats', sampleRate: 2 }));
    assert.equal(e.code, 'PRX_ERR_CONFIG_INVALID');
    assert.deepEqual(e.lines, [
      'kind "io.prx.udpstats" is experimental and must be enabled explicitly with experimental: true',
      'sampleRate: expected a number from 0 to 1, got 2',
    ]);
    assert.deepEqual(validate(kindSlot('telemeter'), { kind: 'io.prx.udpstats', experimental: true }), {
      kind: 'io.prx.udpstats',
      experimental: true,
      sampleRate: 1,
    });
  });
});

describe('choice and oneOrMany', () => {
  const shape = choice('kind', {
    square: z.strictObject({ kind: z.literal('square'), side: z.number() }),
    circle: z.strictObject({ kind: z.literal('circle'), radius: z.number() }),
  }, { default: 'circle' });

  it('selects the form by key, with a default', () => {
    assert.deepEqual(validate(shape, { kind: 'square', side: 2 }), { kind: 'square', side: 2 });
    assert.deepEqual(validate(shape, { radius: 1 }), { kind: 'circle', radius: 1 });
    assert.deepEqual(linesOf(shape, { kind: 'triangle' }), ['x.kind: expected one of "square", "circle", got "triangle"']);
    assert.deepEqual(linesOf(shape, { kind: 'square', radius: 1 }), [
      'x.side: required key is missing',
      'x.radius: unknown key (known keys: kind, side)',
    ]);
  });

  it('accepts one element or a list, keeping element paths', () => {
    const ports = oneOrMany(port);
    assert.deepEqual(validate(ports, 80), [80]);
    assert.deepEqual(validate(ports, [80, 443]), [80, 443]);
    assert.deepEqual(linesOf(ports, 0), ['x: expected an integer from 1 to 65535, got 0']);
    assert.deepEqual(linesOf(ports, [80, 0]), ['x[1]: expected an integer from 1 to 65535, got 0']);
  });
});
