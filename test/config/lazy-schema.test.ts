import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { derefAfterGc } from '../helpers/gc.js';
import { builtSchemaCount, ConfigError, lazySchema, releaseSchemas, validate, validateOnce } from '../../src/config/index.js';

// zod calls this hook (internal, pinned by the lockfile) once per schema it constructs.
interface ZodGlobalConfig {
  postProcessor?: (schema: unknown) => void;
}
const zodConfig = (globalThis as { __zod_globalConfig?: ZodGlobalConfig }).__zod_globalConfig as ZodGlobalConfig;

/** Counts schema constructions, keeping where in src/ the outermost call was made. */
function countConstructions(): { readonly count: () => number; readonly sites: string[]; readonly stop: () => void } {
  let n = 0;
  const sites: string[] = [];
  zodConfig.postProcessor = () => {
    n++;
    const frames = (new Error().stack ?? '').split('\n').filter((line) => line.includes('/src/'));
    sites.push((frames.at(-1) ?? '?').trim());
  };
  return { count: () => n, sites, stop: () => delete zodConfig.postProcessor };
}

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

function sourceModules(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    // The admin UI's browser scripts run in a page, not in the proxy.
    if (entry.isDirectory()) {
      if (relative(SRC, path) !== join('admin', 'ui', 'web')) sourceModules(path, out);
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(path);
  }
  return out.sort();
}

describe('lazySchema', () => {
  it('builds the schema on first use and acts as it', () => {
    let builds = 0;
    const port = lazySchema(() => {
      builds++;
      return z.int().min(1).max(65535);
    });
    assert.equal(builds, 0);
    assert.equal(port.safeParse(8080).success, true);
    assert.equal(port.safeParse(0).success, false);
    assert.equal(port.optional().safeParse(undefined).success, true);
    assert.ok(port instanceof z.ZodNumber);
    // Composed into another schema, it is read through the stand-in.
    const server = z.strictObject({ port: port.default(4140) });
    assert.deepEqual(server.parse({}), { port: 4140 });
    assert.equal(builds, 1);
    releaseSchemas();
  });

  it('is dropped when the outermost validation returns, and rebuilt on the next use', async () => {
    let builds = 0;
    let built: WeakRef<object> | undefined;
    const server = lazySchema(() => {
      builds++;
      const schema = z.strictObject({ port: z.int().min(1) });
      built = new WeakRef(schema);
      return schema;
    });
    assert.deepEqual(validate(server, { port: 1 }), { port: 1 });
    assert.equal(builtSchemaCount(), 0);
    assert.equal(await derefAfterGc(built), undefined, 'the built schema was collected');
    // A failed validation releases too, and the error still reads as the schema's.
    assert.throws(() => validate(server, { port: 0 }), ConfigError);
    assert.equal(builtSchemaCount(), 0);
    assert.equal(builds, 2);
  });

  it('stays built through a validation nested in another', () => {
    let builds = 0;
    const inner = lazySchema(() => {
      builds++;
      return z.string();
    });
    const outer = z.unknown().transform((value) => {
      validate(inner, 'a');
      // The inner validate() returned while the outer one is still running: nothing is dropped.
      assert.ok(builtSchemaCount() > 0);
      return validate(inner, value);
    });
    assert.equal(validate(outer, 'b'), 'b');
    assert.equal(builds, 1);
    assert.equal(builtSchemaCount(), 0);
  });

  it('validateOnce validates each config object once', () => {
    let builds = 0;
    const policy = lazySchema(() => {
      builds++;
      return z.strictObject({ failures: z.int().default(5) });
    });
    const check = validateOnce(policy);
    const raw = Object.freeze({});
    const first = check(raw);
    assert.deepEqual(first, { failures: 5 });
    assert.equal(check(raw), first, 'the same output object, not validated again');
    assert.equal(builds, 1);
    assert.deepEqual(check(Object.freeze({ failures: 2 })), { failures: 2 });
    assert.equal(builds, 2);
    assert.throws(() => check({ failures: 'many' }), ConfigError);
  });

  it('importing any prx module builds no schema', async () => {
    const constructed = countConstructions();
    try {
      for (const file of sourceModules(SRC)) {
        const before = constructed.count();
        await import(file);
        const site = constructed.sites[before];
        assert.equal(constructed.count() - before, 0, `importing ${relative(SRC, file)} builds a zod schema (${site}): wrap it in lazySchema()`);
      }
      // The hook is live: validating a config does build schemas.
      const { validateProxyConfig } = await import('../../src/config/index.js');
      validateProxyConfig({ routers: [{ protocol: 'http', servers: [{ port: 4140 }] }] });
      assert.ok(constructed.count() > 100);
      assert.equal(builtSchemaCount(), 0);
    } finally {
      constructed.stop();
    }
  });
});
