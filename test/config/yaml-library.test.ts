import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { derefAfterGc } from '../helpers/gc.js';
import { withTransientModule, withYamlLibrary, type YamlLibrary } from '../../src/config/yaml-library.js';

// The bundle's own copy of the parser (npm run build, which npm test runs first).
const BUNDLED = fileURLToPath(new URL('../../dist/bundle/yaml.cjs', import.meta.url));

describe('the YAML library', () => {
  it('is lent for a parse', () => {
    assert.deepEqual(withYamlLibrary((yaml) => yaml.parse('a: [1, 2]') as unknown), { a: [1, 2] });
  });

  it('in the bundle, is loaded for the call and collected after', { skip: !existsSync(BUNDLED) && 'run npm run build first' }, async () => {
    const cache = createRequire(import.meta.url).cache;
    let loaded: WeakRef<object> | undefined;
    const value = withTransientModule(BUNDLED, (yaml: YamlLibrary) => {
      loaded = new WeakRef(yaml);
      assert.ok(cache[BUNDLED] !== undefined);
      return yaml.parse('routers: []') as unknown;
    });
    assert.deepEqual(value, { routers: [] });
    assert.equal(cache[BUNDLED], undefined, 'dropped from the require cache');
    assert.equal(await derefAfterGc(loaded), undefined, 'the module was collected');
    // And it loads again for the next read.
    assert.deepEqual(withTransientModule(BUNDLED, (yaml: YamlLibrary) => yaml.parse('x: 1') as unknown), { x: 1 });
  });
});
