import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MaxCallDepthExceededError } from '../../../src/protocol/http/headers/proxy-errors.js';
import type { HeaderMap } from '../../../src/protocol/http/headers/types.js';
import {
  appendVia,
  appendViaToRequest,
  checkCallDepth,
  countViaEntries,
  DEFAULT_MAX_CALL_DEPTH,
  VIA_H2,
  ViaStamp,
} from '../../../src/protocol/http/headers/via.js';

describe('Via', () => {
  it('names this hop by HTTP version, with the router\'s token as a comment', () => {
    const stamp = new ViaStamp('0123456789ab');
    assert.equal(stamp.entry('1.1'), '1.1 prx (0123456789ab)');
    assert.equal(stamp.entry('1.0'), '1.0 prx (0123456789ab)');
    assert.equal(stamp.entry('2.0'), '2.0 prx (0123456789ab)');
    assert.equal(stamp.entry('1.1'), stamp.entry('1.1'), 'made once');
    assert.equal(VIA_H2, 'h2 prx');
    assert.match(new ViaStamp().token, /^[0-9a-f]{12}$/);
    assert.notEqual(new ViaStamp().token, new ViaStamp().token);
  });

  it('recognises its own entry in a Via value, folded or repeated', () => {
    const stamp = new ViaStamp('0123456789ab');
    assert.equal(stamp.seenInHeaders({}), false);
    assert.equal(stamp.seenInHeaders({ via: '1.1 prx (ba9876543210), 1.0 fred' }), false);
    assert.equal(stamp.seenInHeaders({ via: '1.0 fred, 1.1 prx (0123456789ab)' }), true);
    assert.equal(stamp.seenInHeaders({ via: ['1.0 fred', '1.1 prx (0123456789ab)'] }), true);
    assert.equal(stamp.seenIn('1.1 prx'), false);
  });

  it('appends with ", " or sets the header when absent', () => {
    const h: HeaderMap = {};
    appendVia(h, '1.1 prx');
    assert.equal(h['via'], '1.1 prx');
    appendVia(h, '1.0 prx');
    assert.equal(h['via'], '1.1 prx, 1.0 prx');
    const repeated: HeaderMap = { via: ['1.1 a', '1.1 b'] };
    appendVia(repeated, VIA_H2);
    assert.equal(repeated['via'], '1.1 a, 1.1 b, h2 prx');
  });

  it('gives a request without Host an empty one, and keeps an existing Host', () => {
    const h: HeaderMap = {};
    appendViaToRequest(h, '1.1 prx');
    assert.deepEqual(h, { via: '1.1 prx', host: '' });
    const withHost: HeaderMap = { host: 'web' };
    appendViaToRequest(withHost, '1.1 prx');
    assert.equal(withHost['host'], 'web');
  });
});

describe('call depth', () => {
  it('counts entries as Java split(",") does', () => {
    assert.equal(countViaEntries('hop1, hop2, hop3'), 3);
    assert.equal(countViaEntries('1.1 prx'), 1);
    assert.equal(countViaEntries(''), 1);
    assert.equal(countViaEntries('a,,b'), 3);
    assert.equal(countViaEntries('a,b,,'), 2);
    assert.equal(countViaEntries('a, ,'), 2);
    assert.equal(countViaEntries(',,,'), 0);
    assert.equal(countViaEntries(',a'), 2);
  });

  it('refuses more hops than maxCallDepth with the exact message (HTTPE2E: depth 2, three hops)', () => {
    assert.throws(
      () => checkCallDepth({ via: 'hop1, hop2, hop3' }, 2),
      (e: unknown) => {
        assert.ok(e instanceof MaxCallDepthExceededError);
        assert.equal(e.status, 400);
        assert.equal(e.message, 'Maximum number of calls (2) has been exceeded. Please check for proxy loops.');
        return true;
      },
    );
    checkCallDepth({ via: 'hop1, hop2' }, 2);
    checkCallDepth({}, 0);
  });

  it('MaxCallDepthFilterTest: ten hops pass a limit of 10 and fail a limit of 9', () => {
    const via = Array.from({ length: 10 }, (_, i) => `hop ${i + 1}`).join(', ');
    checkCallDepth({ via }, 10);
    assert.throws(() => checkCallDepth({ via }, 9), /Maximum number of calls \(9\) has been exceeded/);
  });

  it('defaults to 1000 hops and counts repeated Via headers together', () => {
    assert.equal(DEFAULT_MAX_CALL_DEPTH, 1000);
    const many = Array.from({ length: 1000 }, () => '1.1 prx');
    checkCallDepth({ via: many });
    assert.throws(() => checkCallDepth({ via: [...many, '1.1 prx'] }), MaxCallDepthExceededError);
  });
});
