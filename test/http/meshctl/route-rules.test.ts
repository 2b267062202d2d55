// Route rules of the v1 apiserver as the meshctl identifier reads and applies them (pure parts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseRouteRules, redirectLocation, rewrittenUrl, selectRule, type RuleRequest } from '../../../src/protocol/http/meshctl/route-rules.js';
import { parseClusters } from '../../../src/protocol/http/meshctl/pilot.js';

const D = 'reviews.default.svc.cluster.local';
const req = (over: Partial<RuleRequest> & { headers?: Record<string, string> } = {}): RuleRequest => ({
  path: over.path ?? '/',
  scheme: over.scheme ?? 'http',
  method: over.method ?? 'GET',
  authority: over.authority ?? 'reviews',
  header: (n) => over.headers?.[n],
});

test('parses the apiserver list: rules by name, other config types skipped, unusable rules reported with a reason', () => {
  const { rules, rejected } = parseRouteRules([
    { type: 'route-rule', name: 'a', spec: { destination: D, precedence: 1, route: [{ tags: { version: 'v1' } }] } },
    { type: 'destination-policy', name: 'p', spec: { destination: D } },
    { type: 'route-rule', name: 'no-dest', spec: { precedence: 1 } },
    { type: 'route-rule', name: 'two-kinds', spec: { destination: D, match: { httpHeaders: { uri: { exact: '/a', prefix: '/b' } } } } },
    { type: 'route-rule', name: 'bad-re', spec: { destination: D, match: { httpHeaders: { x: { regex: '[' } } } } },
    { type: 'route-rule', spec: { destination: D } },
    // `route: null` (Go's empty list) is no destinations.
    { type: 'route-rule', name: 'null-route', spec: { destination: D, route: null } },
  ]);
  assert.deepEqual([...rules.keys()].sort(), ['a', 'null-route']);
  assert.deepEqual(rules.get('null-route')?.route, []);
  assert.deepEqual(rejected.map((r) => r.name).sort(), ['(unnamed)', 'bad-re', 'no-dest', 'two-kinds']);
  assert.match(rejected.find((r) => r.name === 'bad-re')?.reason ?? '', /invalid regex/);
  assert.throws(() => parseRouteRules({ not: 'a list' }));
});

test('selects the highest precedence among the rules whose conditions all hold; ties go to the first name', () => {
  const { rules } = parseRouteRules([
    { type: 'route-rule', name: 'low', spec: { destination: D } },
    { type: 'route-rule', name: 'uri', spec: { destination: D, precedence: 3, match: { httpHeaders: { uri: { prefix: '/api' } } } } },
    { type: 'route-rule', name: 'both', spec: { destination: D, precedence: 5, match: { httpHeaders: { uri: { prefix: '/api' }, 'x-user': { exact: 'jo' } } } } },
    { type: 'route-rule', name: 'b-tie', spec: { destination: D, precedence: 3, match: { httpHeaders: { scheme: { exact: 'https' } } } } },
    { type: 'route-rule', name: 'a-tie', spec: { destination: D, precedence: 3, match: { httpHeaders: { authority: { regex: 'rev.*' } } } } },
    { type: 'route-rule', name: 'src', spec: { destination: D, precedence: 9, match: { sourceTags: { version: 'v1' } } } },
  ]);
  const all = [...rules.values()];
  assert.equal(selectRule(all, D, req({ authority: 'x' }))?.name, 'low');
  assert.equal(selectRule(all, D, req({ path: '/api/1', authority: 'x' }))?.name, 'uri');
  assert.equal(selectRule(all, D, req({ path: '/api/1', headers: { 'x-user': 'jo' } }))?.name, 'both');
  // a regex matches the whole value
  assert.equal(selectRule(all, D, req({ authority: 'reviews', scheme: 'https' }))?.name, 'a-tie');
  assert.equal(selectRule(all, D, req({ authority: 'xreviews', scheme: 'https' }))?.name, 'b-tie');
  assert.equal(selectRule(all, 'other.default.svc.cluster.local', req()), undefined);
});

test('rewrites replace a matched URI prefix (else the path) and keep the query; redirects build the location', () => {
  const { rules } = parseRouteRules([
    { type: 'route-rule', name: 'pfx', spec: { destination: D, match: { httpHeaders: { uri: { prefix: '/ratings' } } }, rewrite: { uri: '/v1/bookRatings' } } },
    { type: 'route-rule', name: 'exact', spec: { destination: D, match: { httpHeaders: { uri: { exact: '/a' } } }, rewrite: { uri: '/b' }, redirect: { uri: '/c' } } },
    { type: 'route-rule', name: 'host', spec: { destination: D, redirect: { authority: 'other' } } },
  ]);
  assert.equal(rewrittenUrl(rules.get('pfx')!, '/ratings/7', '?x=1'), '/v1/bookRatings/7?x=1');
  assert.equal(rewrittenUrl(rules.get('exact')!, '/a', ''), '/b');
  assert.equal(rewrittenUrl(rules.get('host')!, '/a', ''), undefined);
  assert.equal(redirectLocation(rules.get('exact')!, 'http', '/a?q'), '/c');
  assert.equal(redirectLocation(rules.get('host')!, 'https', '/a?q'), 'https://other/a?q');
});

test('clusters come from virtual hosts named <cluster>|<port>, by each of their domains', () => {
  const skipped: string[] = [];
  const table = parseClusters(
    [{ virtual_hosts: [{ name: `${D}|http`, domains: ['reviews', 'reviews:9080'] }, { name: 'bogus', domains: ['x'] }] }, { virtual_hosts: null }],
    (n) => skipped.push(n),
  );
  assert.deepEqual(table.get('reviews:9080'), { dest: D, port: 'http' });
  assert.equal(table.get('x'), undefined);
  assert.deepEqual(skipped, ['bogus']);
});
