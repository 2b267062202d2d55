// Issue #15 item 16 (part): a syntax error in a multi-line dtab (a config file's YAML block, a
// resolver body) names the line and column and quotes only that line, not the whole dtab; dtabs
// over the size limits are refused where they enter with a clear message.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validateProxyConfig } from '../../src/config/index.js';
import '../../src/router/http/index.js';
import { MAX_DTAB_DENTRIES } from '../../src/naming/index.js';
import { request, startController } from '../resolver/helpers.js';
import { deepDtab } from './dtab-bombs.js';

// A long dtab with one mistake on its third line: the message must not quote the other lines.
const LONG = ['/svc => /#/io.prx.fs;', '/svc/a => /$/inet/127.0.0.1/1;', '/svc/b =>> /svc/a;', deepDtab(500).dtab].join('\n');

test('a config dtab of many lines: the error names the line and column and quotes that line only', () => {
  assert.throws(
    () => validateProxyConfig({ routers: [{ protocol: 'http', dtab: LONG, servers: [{ port: 4140 }] }] }),
    (e: Error) => {
      assert.match(e.message, /invalid dtab: simple expected but '>' found at line 3, column 10: '\/svc\/b =>\[>\] \/svc\/a;'/);
      assert.ok(e.message.length < 1000, `the message quotes too much (${e.message.length} chars)`);
      return true;
    },
  );
});

test('a resolver body of many lines: 400 naming the line and column; an oversized JSON dtab is refused', async () => {
  const fx = await startController({});
  try {
    const r = await request(`${fx.url}/api/1/dtabs/long`, { method: 'PUT', headers: { 'content-type': 'application/dtab' }, body: LONG });
    assert.equal(r.status, 400);
    assert.equal(r.text, "simple expected but '>' found at line 3, column 10: '/svc/b =>[>] /svc/a;'\n");
    const many = JSON.stringify(Array.from({ length: MAX_DTAB_DENTRIES + 1 }, (_, i) => ({ prefix: `/s/${i}`, dst: '/t' })));
    const big = await request(`${fx.url}/api/1/dtabs/many`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: many });
    assert.equal(big.status, 400);
    assert.equal(big.text, `dtab too large: more than ${MAX_DTAB_DENTRIES} dentries\n`);
  } finally {
    await fx.close();
  }
});
