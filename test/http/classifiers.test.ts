// HTTP/H2 response classifiers: every kind × methods × statuses × errors, the prx-retryable and
// chunked rules, config handling. Retryable errors are produced for real against local sockets.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { type AddressInfo, type Server, type Socket, createServer } from 'node:net';
import { Client, request } from 'undici';
import { ConfigError, lookupKind } from '../../src/config/index.js';
import { PrxError } from '../../src/core/errors.js';
import type { ResponseClass } from '../../src/service/classifier.js';
import {
  AttemptTimeoutError,
  BindingFailedError,
  BindingTimeoutError,
  ConnectionFailedError,
  NoBrokersAvailableError,
  TooManyWaitersError,
  TotalTimeoutError,
} from '../../src/service/failures.js';
import {
  type ClassifiedResult,
  type ResponseClassifier,
  ClassifierProtocolMismatchError,
  HTTP_CLASSIFIER_KINDS,
  HTTP_RETRYABLE_ERROR_CODES,
  classifierFromConfig,
  isRetryableError,
  withRetryableRules,
} from '../../src/protocol/http/classifiers.js';

// ---------------------------------------------------------------------------------------------
// Real failures: each helper performs one request that fails the way its name says.

const servers: Server[] = [];

async function rawServer(onRequest: (s: Socket) => void): Promise<number> {
  const srv = createServer((s) => {
    s.on('error', () => {});
    s.once('data', () => onRequest(s));
  });
  servers.push(srv);
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  return (srv.address() as AddressInfo).port;
}

async function failure(f: () => Promise<unknown>): Promise<Error> {
  try {
    await f();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected the request to fail');
}

const get = async (port: number) => (await request(`http://127.0.0.1:${port}/`)).body.text();

const real: Record<string, Error> = {};

before(async () => {
  const closedPort = await rawServer(() => {});
  const last = servers.pop() as Server;
  last.close();
  await once(last, 'close');
  real['connection refused'] = await failure(() => get(closedPort));
  real['connection closed'] = await failure(async () => get(await rawServer((s) => s.destroy())));
  real['headers timeout'] = await failure(async () => {
    const client = new Client(`http://127.0.0.1:${await rawServer(() => {})}`, { headersTimeout: 30 });
    try {
      return await (await client.request({ path: '/', method: 'GET' })).body.text();
    } finally {
      await client.close();
    }
  });
  real['malformed response'] = await failure(async () => get(await rawServer((s) => s.end('NOT HTTP\r\n\r\n'))));
  real['conflicting content-length'] = await failure(async () =>
    get(await rawServer((s) => s.end('HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabc'))),
  );
  real['aborted'] = await failure(async () => {
    const port = await rawServer(() => {});
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 10);
    return (await request(`http://127.0.0.1:${port}/`, { signal: ac.signal })).body.text();
  });
});

after(() => {
  for (const s of servers) s.close();
});

const RETRYABLE_REAL = ['connection refused', 'connection closed', 'headers timeout', 'malformed response', 'conflicting content-length'];
const bindingTimeout = new PrxError('PRX_ERR_BINDING_TIMEOUT', 'Exceeded 10.seconds binding timeout while resolving name: /svc/x');
const plain = new Error('boom');

describe('isRetryableError', () => {
  it('recognises real timeout, write, closed and framing failures', () => {
    for (const name of RETRYABLE_REAL) assert.equal(isRetryableError(real[name]), true, `${name}: ${String(real[name])}`);
  });

  it('decides the router core’s failures by their flags: timeouts, failed connections and full pools, not naming', () => {
    assert.equal(isRetryableError(new TotalTimeoutError(1)), true);
    assert.equal(isRetryableError(new AttemptTimeoutError(1)), true);
    assert.equal(isRetryableError(new ConnectionFailedError('127.0.0.1:1', '/$/inet/127.0.0.1/1', [], new Error('refused'))), true);
    assert.equal(isRetryableError(new TooManyWaitersError('127.0.0.1:1')), true);
    assert.equal(isRetryableError(new BindingTimeoutError(1, '/svc/a')), false);
    assert.equal(isRetryableError(new NoBrokersAvailableError('/svc/a')), false);
    // A router failure is judged by its flags, not by a code its cause carries.
    const reset = Object.assign(new Error('reset'), { code: 'ECONNRESET' });
    assert.equal(isRetryableError(new BindingFailedError('/svc/a', reset)), false);
  });

  it('refuses aborts, binding timeouts, plain errors and non-errors', () => {
    assert.equal(isRetryableError(real['aborted']), false);
    assert.equal(isRetryableError(bindingTimeout), false);
    assert.equal(isRetryableError(plain), false);
    for (const v of [undefined, null, 'ECONNRESET', 42, { code: 5 }]) assert.equal(isRetryableError(v), false);
  });

  it('knows every listed code and llhttp codes, and follows causes a few levels deep', () => {
    for (const code of HTTP_RETRYABLE_ERROR_CODES) assert.equal(isRetryableError(Object.assign(new Error(code), { code })), true, code);
    for (const code of ['ETIMEDOUT', 'ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'ECONNRESET', 'EPIPE']) {
      assert.equal(isRetryableError(Object.assign(new Error(code), { code })), true, code);
    }
    assert.equal(isRetryableError(Object.assign(new Error('x'), { code: 'HPE_INVALID_CONSTANT' })), true);
    const wrapped = new TypeError('fetch failed', { cause: new Error('outer', { cause: real['connection refused'] }) });
    assert.equal(isRetryableError(wrapped), true);
    let deep: Error = Object.assign(new Error('x'), { code: 'ECONNRESET' });
    for (let i = 0; i < 5; i++) deep = new Error(`wrap ${i}`, { cause: deep });
    assert.equal(isRetryableError(deep), false);
  });
});

// ---------------------------------------------------------------------------------------------

const METHODS = ['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE', 'POST', 'PATCH', 'CONNECT', 'get'];
const RETRYABLE_METHODS: Record<string, readonly string[]> = {
  nonRetryable5XX: [],
  retryableRead5XX: ['GET', 'HEAD', 'OPTIONS', 'TRACE'],
  retryableIdempotent5XX: ['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE'],
  retryableAll5XX: ['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE', 'POST', 'PATCH'],
  allSuccessful: [],
};
const SUCCESS_STATUSES = [100, 200, 204, 302, 400, 404, 429, 499, 600];
const FAILURE_STATUSES = [500, 502, 503, 504, 599];

/** What each kind should say, from the spec's table. */
function expected(suffix: string, r: ClassifiedResult): ResponseClass {
  const retryableMethod = RETRYABLE_METHODS[suffix]?.includes(r.method) ?? false;
  if (r.error !== undefined) return retryableMethod && isRetryableError(r.error) ? 'retryableFailure' : 'failure';
  if (suffix === 'allSuccessful') return 'success';
  if ((r.status ?? 0) >= 500 && (r.status ?? 0) <= 599) return retryableMethod ? 'retryableFailure' : 'failure';
  return 'success';
}

describe('classifier kinds', () => {
  it('registers the five kinds for http and h2', () => {
    assert.equal(HTTP_CLASSIFIER_KINDS.length, 10);
    for (const suffix of Object.keys(RETRYABLE_METHODS)) {
      for (const p of ['http', 'h2']) assert.ok(lookupKind('responseClassifier', `io.prx.${p}.${suffix}`), `${p} ${suffix}`);
    }
  });

  for (const protocol of ['http', 'h2'] as const) {
    for (const suffix of Object.keys(RETRYABLE_METHODS)) {
      it(`io.prx.${protocol}.${suffix}: methods × statuses × errors`, () => {
        const c = classifierFromConfig({ kind: `io.prx.${protocol}.${suffix}` }, protocol);
        for (const method of METHODS) {
          for (const status of [...SUCCESS_STATUSES, ...FAILURE_STATUSES]) {
            const r = { method, status };
            assert.equal(c.classify(r), expected(suffix, r), `${method} ${status}`);
          }
          for (const error of [...RETRYABLE_REAL.map((n) => real[n] as Error), real['aborted'] as Error, bindingTimeout, plain]) {
            const r = { method, error };
            assert.equal(c.classify(r), expected(suffix, r), `${method} ${error.message}`);
            // An error wins over a status that arrived before it (the body failed).
            assert.equal(c.classify({ method, status: 200, error }), expected(suffix, r), `${method} 200 then ${error.message}`);
          }
        }
      });
    }
  }

  it('spot checks from the spec table', () => {
    const read = classifierFromConfig({ kind: 'io.prx.http.retryableRead5XX' }, 'http');
    assert.equal(read.classify({ method: 'GET', status: 500 }), 'retryableFailure');
    assert.equal(read.classify({ method: 'POST', status: 500 }), 'failure');
    assert.equal(read.classify({ method: 'PUT', status: 503 }), 'failure');
    assert.equal(read.classify({ method: 'GET', status: 404 }), 'success');
    const idem = classifierFromConfig({ kind: 'io.prx.http.retryableIdempotent5XX' }, 'http');
    assert.equal(idem.classify({ method: 'DELETE', status: 502 }), 'retryableFailure');
    assert.equal(idem.classify({ method: 'PATCH', status: 502 }), 'failure');
    const all = classifierFromConfig({ kind: 'io.prx.http.retryableAll5XX' }, 'http');
    assert.equal(all.classify({ method: 'POST', error: real['connection refused'] as Error }), 'retryableFailure');
    assert.equal(all.classify({ method: 'POST', error: plain }), 'failure');
    const ok = classifierFromConfig({ kind: 'io.prx.h2.allSuccessful' }, 'h2');
    assert.equal(ok.classify({ method: 'GET', status: 503 }), 'success');
    assert.equal(ok.classify({ method: 'GET', error: plain }), 'failure');
  });
});

describe('prx-retryable and chunked rules', () => {
  const never: ResponseClassifier = { classify: () => 'failure' };
  const always: ResponseClassifier = { classify: () => 'retryableFailure' };
  const fine: ResponseClassifier = { classify: () => 'success' };

  it('a failed response carrying prx-retryable: true becomes retryable', () => {
    assert.equal(withRetryableRules(never).classify({ method: 'POST', status: 500, retryableHeader: true }), 'retryableFailure');
    assert.equal(withRetryableRules(never).classify({ method: 'POST', status: 500, retryableHeader: false }), 'failure');
    assert.equal(withRetryableRules(never).classify({ method: 'POST', status: 500 }), 'failure');
  });

  it('the header neither fails a success nor upgrades an exception', () => {
    assert.equal(withRetryableRules(fine).classify({ method: 'GET', status: 200, retryableHeader: true }), 'success');
    assert.equal(withRetryableRules(never).classify({ method: 'GET', error: plain, retryableHeader: true }), 'failure');
  });

  it('a chunked request is never retryable, whatever made it so', () => {
    assert.equal(withRetryableRules(always).classify({ method: 'GET', status: 500, chunked: true }), 'failure');
    assert.equal(withRetryableRules(never).classify({ method: 'POST', status: 502, retryableHeader: true, chunked: true }), 'failure');
    assert.equal(withRetryableRules(always).classify({ method: 'GET', status: 500, chunked: false }), 'retryableFailure');
    assert.equal(withRetryableRules(fine).classify({ method: 'GET', status: 200, chunked: true }), 'success');
  });

  it('configured classifiers come wrapped', () => {
    const c = classifierFromConfig(undefined, 'http');
    assert.equal(c.classify({ method: 'POST', status: 503, retryableHeader: true }), 'retryableFailure');
    const read = classifierFromConfig({ kind: 'io.prx.h2.retryableRead5XX' }, 'h2');
    assert.equal(read.classify({ method: 'GET', status: 500, chunked: true }), 'failure');
    assert.equal(read.classify({ method: 'GET', error: real['connection closed'] as Error, chunked: true }), 'failure');
  });
});

describe('classifierFromConfig', () => {
  it('defaults to nonRetryable5XX for the protocol', () => {
    for (const protocol of ['http', 'h2'] as const) {
      const c = classifierFromConfig(undefined, protocol);
      assert.equal(c.classify({ method: 'GET', status: 500 }), 'failure');
      assert.equal(c.classify({ method: 'GET', status: 200 }), 'success');
      assert.equal(c.classify({ method: 'GET', error: real['connection refused'] as Error }), 'failure');
    }
  });

  it('refuses unknown kinds, listing the known ones', () => {
    assert.throws(
      () => classifierFromConfig({ kind: 'io.prx.http.sometimes' }, 'http'),
      (e: unknown) =>
        e instanceof ConfigError &&
        e.code === 'PRX_ERR_CONFIG_UNKNOWN_KIND' &&
        /unknown responseClassifier kind "io\.prx\.http\.sometimes" \(known kinds: .*io\.prx\.h2\.allSuccessful.*io\.prx\.http\.retryableRead5XX/.test(
          e.message,
        ),
    );
  });

  it('refuses parameters the kinds do not have', () => {
    assert.throws(
      () => classifierFromConfig({ kind: 'io.prx.http.retryableRead5XX', methods: ['POST'] }, 'http'),
      (e: unknown) => e instanceof ConfigError && /methods: unknown key/.test(e.message),
    );
  });

  it("refuses the other protocol's kinds", () => {
    assert.throws(() => classifierFromConfig({ kind: 'io.prx.h2.retryableRead5XX' }, 'http'), ClassifierProtocolMismatchError);
    assert.throws(
      () => classifierFromConfig({ kind: 'io.prx.http.nonRetryable5XX' }, 'h2'),
      { code: 'PRX_ERR_CLASSIFIER_PROTOCOL', message: /io\.prx\.http\.nonRetryable5XX.*h2.*io\.prx\.h2\.\*/ },
    );
  });
});

describe('classifierFromConfig caching', () => {
  it('builds once per config object and per protocol', () => {
    const cfg = { kind: 'io.prx.http.retryableRead5XX' };
    const a = classifierFromConfig(cfg, 'http');
    assert.equal(classifierFromConfig(cfg, 'http'), a);
    assert.notEqual(classifierFromConfig({ kind: 'io.prx.http.retryableRead5XX' }, 'http'), a);
    assert.equal(classifierFromConfig(undefined, 'h2'), classifierFromConfig(undefined, 'h2'));
    assert.notEqual(classifierFromConfig(undefined, 'h2'), classifierFromConfig(undefined, 'http'));
  });

  it('does not cache failures', () => {
    const bad = { kind: 'io.prx.h2.retryableRead5XX' };
    assert.throws(() => classifierFromConfig(bad, 'http'), ClassifierProtocolMismatchError);
    assert.throws(() => classifierFromConfig(bad, 'http'), ClassifierProtocolMismatchError);
    assert.equal(classifierFromConfig(bad, 'h2').classify({ method: 'GET', status: 500 }), 'retryableFailure');
  });
});
