// Linkerd's RewriteHostHeader on prx's HTTP requests: the Host of each attempt follows its address
// set's `authority` metadata, an attempt to a destination without one gets the client's Host back
// (or none, when the client sent none), and Location/Refresh are restored in the response.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type HostRewritable, restoreHostInResponse, rewriteHostForAttempt } from '../../src/protocol/http/headers/host-rewrite.js';

test('each attempt carries its destination’s authority, or the client’s Host', () => {
  const out: HostRewritable = { headers: { host: 'web', accept: '*/*' }, hostBeforeRewrite: undefined };
  rewriteHostForAttempt(out, {});
  assert.deepEqual(out, { headers: { host: 'web', accept: '*/*' }, hostBeforeRewrite: undefined }, 'no authority: untouched');
  rewriteHostForAttempt(out, { authority: 'web.service.dc1.consul' });
  assert.equal(out.headers.host, 'web.service.dc1.consul');
  rewriteHostForAttempt(out, { authority: 'web.service.dc2.consul' });
  assert.equal(out.headers.host, 'web.service.dc2.consul');
  assert.equal(out.hostBeforeRewrite, 'web', 'the client’s Host is kept across attempts');
  const response = { location: 'http://web.service.dc2.consul/a', refresh: '0; url=https://web.service.dc2.consul/b', 'content-type': 'text/plain' };
  restoreHostInResponse(out, response);
  assert.deepEqual(response, { location: 'http://web/a', refresh: '0; url=https://web/b', 'content-type': 'text/plain' });
  rewriteHostForAttempt(out, { authority: 42 });
  assert.deepEqual(out, { headers: { host: 'web', accept: '*/*' }, hostBeforeRewrite: undefined }, 'a retry elsewhere goes as the client sent it');
});

test('a request without Host gets none back; nothing is restored in a response that was not rewritten', () => {
  const out: HostRewritable = { headers: {}, hostBeforeRewrite: undefined };
  rewriteHostForAttempt(out, { authority: 'svc.service.dc1.consul' });
  assert.equal(out.headers.host, 'svc.service.dc1.consul');
  const response = { location: 'http://svc.service.dc1.consul/x' };
  restoreHostInResponse(out, response);
  assert.equal(response.location, 'http://svc.service.dc1.consul/x', 'no client Host to give back');
  rewriteHostForAttempt(out, {});
  assert.deepEqual(out, { headers: {}, hostBeforeRewrite: undefined });
  const plain = { location: 'http://elsewhere/' };
  restoreHostInResponse({ headers: { host: 'web' }, hostBeforeRewrite: undefined }, plain);
  assert.equal(plain.location, 'http://elsewhere/');
});
