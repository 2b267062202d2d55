// Per-name policy parameters: global and static policies over the built-in defaults, validated by
// the real config schemas.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  clientParamDefaults,
  clientPolicy,
  serviceParamDefaults,
  servicePolicy,
  validate,
} from '../../src/config/index.js';
import { PathPatternError, readPath, substituteVars } from '../../src/naming/index.js';
import { PolicyResolver, resolvePolicyParams } from '../../src/service/policy/index.js';
import '../../src/protocol/http/classifiers.js';

/** The client parameters these tests read (the router declares the full set). */
interface ClientParams {
  readonly failFast: boolean;
  readonly forwardClientCert: boolean;
  readonly hostConnectionPool: { readonly minSize: number; readonly maxSize: number; readonly maxWaiters: number };
  readonly tls?: { readonly commonName?: string };
  readonly requestAttemptTimeoutMs?: number;
}

const client = (raw: unknown) => validate(clientPolicy(), raw);
const service = (raw: unknown) => validate(servicePolicy(), raw);

describe('global policies', () => {
  it('lay the inline parameters over the defaults, the same for every name', () => {
    const resolver = new PolicyResolver(client({ failFast: true, requestAttemptTimeoutMs: 250 }), clientParamDefaults);
    const a = resolver.resolve(readPath('/$/inet/127.1/8080'));
    assert.deepEqual(a.params, { ...clientParamDefaults, failFast: true, requestAttemptTimeoutMs: 250 });
    assert.deepEqual(a.vars, {});
    assert.equal(resolver.resolve(readPath('/#/io.prx.fs/users')), a);
  });

  it('an empty policy gives the defaults', () => {
    const { params } = resolvePolicyParams(client(undefined), readPath('/x'), clientParamDefaults);
    assert.deepEqual(params, clientParamDefaults);
    assert.equal('kind' in params, false);
  });

  it('service parameters: retries, timeouts, classifier', () => {
    const policy = service({ totalTimeoutMs: 1000, responseClassifier: { kind: 'io.prx.http.retryableRead5XX' } });
    const { params } = resolvePolicyParams(policy, readPath('/svc/users'), serviceParamDefaults);
    assert.deepEqual(params, {
      retries: { budget: { minRetriesPerSec: 10, percentCanRetry: 0.2, ttlSecs: 10 } },
      totalTimeoutMs: 1000,
      responseClassifier: { kind: 'io.prx.http.retryableRead5XX' },
    });
  });
});

describe('static policies', () => {
  // The spec's shape: every matching config applies, in file order, later ones winning.
  const policy = client({
    kind: 'io.prx.static',
    configs: [
      { prefix: '/#/io.prx.fs/*', failFast: true, hostConnectionPool: { minSize: 2 } },
      { prefix: '/#/io.prx.fs/{service}', tls: { commonName: '{service}.example.com' }, requestAttemptTimeoutMs: 100 },
      { prefix: '/#/io.prx.fs/users', hostConnectionPool: { maxSize: 5 }, requestAttemptTimeoutMs: 900 },
      { prefix: '/$/inet/{host}/{port}', forwardClientCert: true },
    ],
  });
  const resolver = new PolicyResolver<ClientParams>(policy, clientParamDefaults);

  it('combine every matching config, later ones replacing a parameter whole', () => {
    const { params, vars } = resolver.resolve(readPath('/#/io.prx.fs/users/residual'));
    assert.deepEqual(params, {
      ...clientParamDefaults,
      failFast: true,
      // The third config's pool replaces the first one's: nested objects are not merged.
      hostConnectionPool: { minSize: 0, maxSize: 5, maxWaiters: 2147483647 },
      tls: { commonName: '{service}.example.com', disableValidation: false },
      requestAttemptTimeoutMs: 900,
    });
    assert.deepEqual(vars, { service: 'users' });
    assert.equal(substituteVars(params.tls?.commonName ?? '', vars), 'users.example.com');
  });

  it('apply only the configs whose prefix matches', () => {
    const { params, vars } = resolver.resolve(readPath('/#/io.prx.fs/books'));
    assert.equal(params.failFast, true);
    assert.deepEqual(params.hostConnectionPool, { minSize: 2, maxSize: 2147483647, maxWaiters: 2147483647 });
    assert.equal(params.requestAttemptTimeoutMs, 100);
    assert.deepEqual(vars, { service: 'books' });

    const inet = resolver.resolve(readPath('/$/inet/127.1/8080'));
    assert.deepEqual(inet.params, { ...clientParamDefaults, forwardClientCert: true });
    assert.deepEqual(inet.vars, { host: '127.1', port: '8080' });
  });

  it('give the defaults, shared, to names no prefix matches (prefix matching, not substring)', () => {
    const a = resolver.resolve(readPath('/#/io.prx.consul/users'));
    assert.deepEqual(a.params, clientParamDefaults);
    assert.deepEqual(a.vars, {});
    assert.equal(resolver.resolve(readPath('/#/io.prx.fs')), a);
    assert.equal(resolver.resolve(readPath('/svc/#/io.prx.fs/users')), a);
  });

  it('later captures of the same variable win', () => {
    const twice = client({
      kind: 'io.prx.static',
      configs: [
        { prefix: '/{a}/{b}', failFast: true },
        { prefix: '/*/{a}', forwardClientCert: true },
      ],
    });
    const { params, vars } = resolvePolicyParams<ClientParams>(twice, readPath('/x/y/z'), clientParamDefaults);
    assert.deepEqual(vars, { a: 'y', b: 'y' });
    assert.equal(params.failFast && params.forwardClientCert, true);
  });

  it('service policies per logical name', () => {
    const svc = service({
      kind: 'io.prx.static',
      configs: [
        { prefix: '/svc', totalTimeoutMs: 500 },
        { prefix: '/svc/users', retries: { budget: { percentCanRetry: 0.5 } } },
      ],
    });
    const users = resolvePolicyParams(svc, readPath('/svc/users'), serviceParamDefaults).params;
    assert.deepEqual(users, { retries: { budget: { minRetriesPerSec: 10, percentCanRetry: 0.5, ttlSecs: 10 } }, totalTimeoutMs: 500 });
    const other = resolvePolicyParams(svc, readPath('/svc/books'), serviceParamDefaults).params;
    assert.deepEqual(other, { ...serviceParamDefaults, totalTimeoutMs: 500 });
  });

  it('freeze their results and leave the defaults alone', () => {
    const defaults = { failFast: false, nested: { x: 1 } };
    const r = new PolicyResolver({ kind: 'io.prx.static', configs: [{ prefix: '/a', failFast: true }] }, defaults);
    const got = r.resolve(readPath('/a'));
    assert.ok(Object.isFrozen(got) && Object.isFrozen(got.params) && Object.isFrozen(got.vars));
    assert.throws(() => {
      (got.params as { failFast: boolean }).failFast = false;
    }, TypeError);
    assert.deepEqual(defaults, { failFast: false, nested: { x: 1 } });
    assert.equal(got.params.nested, defaults.nested);
  });

  it('an undefined parameter inherits', () => {
    const r = new PolicyResolver({ kind: 'io.prx.static', configs: [{ prefix: '/a', failFast: undefined }] }, { failFast: true });
    assert.equal(r.resolve(readPath('/a/b')).params.failFast, true);
  });
});

describe('malformed policies', () => {
  it('refuse a static config without a valid prefix', () => {
    assert.throws(() => new PolicyResolver({ kind: 'io.prx.static', configs: [{ failFast: true }] }, {}), PathPatternError);
    assert.throws(() => new PolicyResolver({ kind: 'io.prx.static', configs: [{ prefix: 'svc' }] }, {}), /must start with "\/"/);
  });

  it('refuse an unknown kind or static without configs', () => {
    assert.throws(() => new PolicyResolver({ kind: 'io.prx.dynamic' }, {}), { code: 'PRX_ERR_BUG' });
    assert.throws(() => new PolicyResolver({ kind: 'io.prx.static' }, {}), { code: 'PRX_ERR_BUG' });
  });
});
