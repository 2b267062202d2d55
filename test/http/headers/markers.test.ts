import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Path } from '../../../src/naming/index.js';
import {
  isRetryableResponse,
  readSuccessClassHeader,
  residualHeaderValue,
  writeDstBoundHeaders,
  writeDstServiceHeader,
  writeSuccessClassHeader,
} from '../../../src/protocol/http/headers/markers.js';
import type { HeaderMap } from '../../../src/protocol/http/headers/types.js';

describe('prx-dst-* headers', () => {
  it('writes the service and bound id, and the residual when there is one (HeadersTest)', () => {
    const h: HeaderMap = {};
    writeDstServiceHeader(h, '/freedom');
    writeDstBoundHeaders(h, '/id', residualHeaderValue(Path.utf8('residual')));
    assert.deepEqual(h, { 'prx-dst-service': '/freedom', 'prx-dst-client': '/id', 'prx-dst-residual': '/residual' });
  });

  it('omits the residual header when the residual is empty, removing a stale one', () => {
    assert.equal(residualHeaderValue(Path.empty), undefined);
    const h: HeaderMap = { 'prx-dst-residual': '/from-upstream' };
    writeDstBoundHeaders(h, '/id', residualHeaderValue(Path.empty));
    assert.deepEqual(h, { 'prx-dst-client': '/id' });
  });
});

describe('prx-retryable', () => {
  it('is true only for "true" in any case', () => {
    assert.equal(isRetryableResponse({ 'prx-retryable': 'true' }), true);
    assert.equal(isRetryableResponse({ 'prx-retryable': 'TRUE' }), true);
    assert.equal(isRetryableResponse({ 'prx-retryable': ['True', 'false'] }), true);
    for (const v of ['false', '1', 'yes', '', 'true ', 'truee']) assert.equal(isRetryableResponse({ 'prx-retryable': v }), false, v);
    assert.equal(isRetryableResponse({}), false);
  });
});

describe('prx-success-class', () => {
  it('writes Java double text and reads numbers back', () => {
    const h: HeaderMap = {};
    writeSuccessClassHeader(h, 1);
    assert.equal(h['prx-success-class'], '1.0');
    writeSuccessClassHeader(h, 0);
    assert.equal(h['prx-success-class'], '0.0');
    writeSuccessClassHeader(h, 0.5);
    assert.equal(h['prx-success-class'], '0.5');
    assert.equal(readSuccessClassHeader(h), 0.5);
    assert.equal(readSuccessClassHeader({ 'prx-success-class': '1.0' }), 1);
    assert.equal(readSuccessClassHeader({ 'prx-success-class': 'high' }), undefined);
    assert.equal(readSuccessClassHeader({ 'prx-success-class': ' ' }), undefined);
    assert.equal(readSuccessClassHeader({}), undefined);
  });
});
