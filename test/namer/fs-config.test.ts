import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, validate } from '../../src/config/index.js';
import { namerList } from '../../src/config/index.js';
import '../../src/namer/fs.js';

test('io.prx.fs config: prefix defaults to /io.prx.fs; a missing rootDir directory is named', () => {
  const ok = validate(namerList, [{ kind: 'io.prx.fs', rootDir: '.' }]);
  assert.deepEqual(ok, [{ kind: 'io.prx.fs', prefix: '/io.prx.fs', rootDir: '.' }]);
  assert.throws(
    () => validate(namerList, [{ kind: 'io.prx.fs', rootDir: '/no/such/dir' }]),
    (e: unknown) => e instanceof ConfigError && e.message.includes('[0].rootDir: directory does not exist, got "/no/such/dir"'),
  );
  assert.throws(
    () => validate(namerList, [{ kind: 'io.prx.fs' }]),
    (e: unknown) => e instanceof ConfigError && e.message.includes('[0].rootDir: required key is missing'),
  );
});
