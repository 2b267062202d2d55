import assert from 'node:assert/strict';
import { createServer, get, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { readDtab } from '../../../src/naming/index.js';
import {
  clearResponseContext,
  errorHeaderValue,
  ProxyErrorResponse,
  renderError,
} from '../../../src/protocol/http/headers/error-response.js';
import type {
  ProxyError} from '../../../src/protocol/http/headers/proxy-errors.js';
import { AdminTargetRefusedError, AttemptTimeoutError, TooManyWaitersError, TotalTimeoutError } from '../../../src/service/failures.js';
import {
  ConflictingContentLengthError,
  DynBoundTimeoutError,
  formatFinagleDuration,
  formatFinagleRequest,
  InvalidDtabHeaderError,
  MaxCallDepthExceededError,
  MaxConcurrentRequestsError,
  RichConnectionFailedError,
  RichNoBrokersAvailableError,
  UnknownDestinationError,
  UpstreamFailureError,
  WriteFailedError,
} from '../../../src/protocol/http/headers/proxy-errors.js';
import type { HeaderMap } from '../../../src/protocol/http/headers/types.js';

describe('errorHeaderValue (Java URLEncoder)', () => {
  it('keeps A-Za-z0-9.-*_, turns spaces into + and encodes everything else', () => {
    assert.equal(errorHeaderValue('Az09.-*_', 100), 'Az09.-*_');
    assert.equal(errorHeaderValue('a b\nc', 100), 'a+b%0Ac');
    assert.equal(errorHeaderValue('/svc/x: 50% ~!', 100), '%2Fsvc%2Fx%3A+50%25+%7E%21');
    assert.equal(errorHeaderValue('"quoted"\r\t', 100), '%22quoted%22%0D%09');
  });

  it('percent-encodes the UTF-8 bytes of non-ASCII characters', () => {
    assert.equal(errorHeaderValue('é', 100), '%C3%A9');
    assert.equal(errorHeaderValue('→ 🙂', 100), '%E2%86%92+%F0%9F%99%82');
  });

  it('never contains a raw newline or a byte outside printable ASCII', () => {
    const v = errorHeaderValue('Unable to route request!\n\nservice name: /svc/ü\n', 8192);
    assert.doesNotMatch(v, /[^\x21-\x7e]/);
    assert.equal(decodeURIComponent(v.replaceAll('+', ' ')), 'Unable to route request!\n\nservice name: /svc/ü\n');
  });

  it('truncates to maxBytes without splitting an escape or a character', () => {
    assert.equal(errorHeaderValue('abc', 2), 'ab');
    assert.equal(errorHeaderValue('a\nb', 3), 'a'); // %0A would overrun: stop before it
    assert.equal(errorHeaderValue('a\nb', 4), 'a%0A');
    assert.equal(errorHeaderValue('é', 5), ''); // both bytes of é or neither
    assert.equal(errorHeaderValue('aé', 6), 'a');
    assert.equal(errorHeaderValue('aé', 7), 'a%C3%A9');
    assert.equal(errorHeaderValue('x'.repeat(10_000), 8 * 1024).length, 8192);
    assert.equal(errorHeaderValue('anything', 0), '');
  });
});

describe('Finagle renderings', () => {
  it('formats durations as Duration.toString does', () => {
    assert.equal(formatFinagleDuration(10_000), '10.seconds');
    assert.equal(formatFinagleDuration(1_000), '1.seconds');
    assert.equal(formatFinagleDuration(1_500), '1.seconds+500.milliseconds');
    assert.equal(formatFinagleDuration(250), '250.milliseconds');
    assert.equal(formatFinagleDuration(90_000), '1.minutes+30.seconds');
    assert.equal(formatFinagleDuration(86_400_000 + 3_600_000), '1.days+1.hours');
    assert.equal(formatFinagleDuration(0), '0.seconds');
    assert.equal(formatFinagleDuration(0.5), '500.microseconds');
    assert.equal(formatFinagleDuration(-1_500), '-1.seconds-500.milliseconds');
  });

  it('formats a request as Finagle Request.toString', () => {
    assert.equal(
      formatFinagleRequest({ method: 'get', uri: '/path?q=1', remoteAddress: '127.0.0.1', remotePort: 1234 }),
      'Request("GET /path?q=1", from /127.0.0.1:1234)',
    );
    assert.equal(formatFinagleRequest({ method: 'POST', uri: '/' }), 'Request("POST /", from 0.0.0.0/0.0.0.0:0)');
  });
});

/** The status and body text a failure renders to. */
function rendered(err: unknown): { status: number; body: string; headers: Record<string, string> } {
  const r = renderError(err);
  return { status: r.status, body: r.body.toString('utf8'), headers: r.headers };
}

describe('proxy errors: statuses and exact messages', () => {
  it('UnknownDestination is 400 with the request and the reason', () => {
    const r = rendered(
      new UnknownDestinationError({ method: 'GET', uri: '/path', remoteAddress: '127.0.0.1', remotePort: 1234 }, 'Host header is absent'),
    );
    assert.equal(r.status, 400);
    assert.equal(r.body, 'Unknown destination: Request("GET /path", from /127.0.0.1:1234) / Host header is absent');
    assert.equal(r.headers['prx-retryable'], undefined);
  });

  it('invalid dtab header, call depth and conflicting Content-Length are 400', () => {
    const dtab = rendered(new InvalidDtabHeaderError("'=>' expected but 'a' found at '/i am[ ]not a dtab'"));
    assert.equal(dtab.status, 400);
    assert.equal(dtab.body, "'=>' expected but 'a' found at '/i am[ ]not a dtab'");
    const depth = rendered(new MaxCallDepthExceededError(2));
    assert.equal(depth.status, 400);
    assert.equal(depth.body, 'Maximum number of calls (2) has been exceeded. Please check for proxy loops.');
    const cl = rendered(new ConflictingContentLengthError('request'));
    assert.deepEqual([cl.status, cl.body], [400, 'conflicting `Content-Length` headers']);
    assert.equal(rendered(new ConflictingContentLengthError('response')).status, 502);
  });

  it('NoBrokersAvailable is 502 "Unable to route request!" with every dtab, one dentry per line', () => {
    const err = new RichNoBrokersAvailableError({
      service: '/svc/x',
      baseDtab: readDtab('/svc=>/#/io.prx.fs;/svc/x=>/$/inet/127.1/1 | ~'),
      overrideDtab: readDtab('/svc/x=>/$/nil'),
    });
    const r = rendered(err);
    assert.equal(r.status, 502);
    assert.equal(
      r.body,
      'Unable to route request!\n\nservice name: /svc/x\ndtab:\n\nbase dtab:\n  /svc => /#/io.prx.fs\n' +
        '  /svc/x => /$/inet/127.1/1 | ~\noverride dtab:\n  /svc/x => /$/nil\n',
    );
    assert.equal(err.code, 'PRX_ERR_NO_BROKERS_AVAILABLE');
  });

  it('ConnectionFailed is 502 naming the service, client, addresses and selected address', () => {
    const details = {
      remote: '127.0.0.1:8081',
      service: '/svc/dog',
      client: '/$/inet/127.1/8081',
      addresses: ['127.0.0.1:8081', '127.0.0.1:8082'],
    };
    const r = rendered(new RichConnectionFailedError(details));
    assert.equal(r.status, 502);
    assert.equal(
      r.body,
      'Unable to establish connection to 127.0.0.1:8081.\n\nservice name: /svc/dog\nclient name: /$/inet/127.1/8081\n' +
        'addresses: [127.0.0.1:8081, 127.0.0.1:8082]\nselected address: 127.0.0.1:8081\n',
    );
    assert.equal(r.headers['prx-retryable'], undefined);
    const withResolution = rendered(new RichConnectionFailedError({ ...details, resolution: ['  /svc/dog', '  /$/inet/127.1/8081 (/svc/dog=>/$/inet/127.1/8081)'] }));
    assert.match(withResolution.body, /selected address: 127\.0\.0\.1:8081\ndtab resolution:\n {2}\/svc\/dog\n {2}\/\$\/inet\/127\.1\/8081 \(\/svc\/dog=>\/\$\/inet\/127\.1\/8081\)\n$/);
  });

  it('binding timeout is 502 with Finagle durations', () => {
    const r = rendered(new DynBoundTimeoutError(10_000, '/svc/x'));
    assert.deepEqual([r.status, r.body], [502, 'Exceeded 10.seconds binding timeout while resolving name: /svc/x']);
    assert.equal(
      new DynBoundTimeoutError(1_500, '/svc/x', '/$/inet/127.1/1').message,
      'Exceeded 1.seconds+500.milliseconds binding timeout while connecting to /$/inet/127.1/1 for name: /svc/x',
    );
  });

  it('total and attempt timeouts are 503 with Finagle texts', () => {
    const total = rendered(new TotalTimeoutError(600));
    assert.equal(total.status, 503);
    assert.equal(
      total.body,
      'exceeded 600.milliseconds to unspecified while waiting for a response for the request, including retries (if applicable). Remote Info: Not Available',
    );
    const attempt = rendered(new AttemptTimeoutError(2_000, { serviceName: '$/inet/127.1/8080' }));
    assert.equal(attempt.status, 503);
    assert.equal(
      attempt.body,
      'exceeded 2.seconds to $/inet/127.1/8080 while waiting for a response for an individual request, excluding retries. Remote Info: Not Available',
    );
    assert.equal(attempt.headers['prx-retryable'], undefined);
    assert.equal(rendered(new TotalTimeoutError(1, { retryable: true })).headers['prx-retryable'], 'true');
  });

  it('the router core’s rejections: a full pool is a retryable 502, an admin target a 403', () => {
    const full = rendered(new TooManyWaitersError('127.0.0.1:1'));
    assert.deepEqual([full.status, full.headers['prx-retryable']], [502, 'true']);
    const admin = rendered(new AdminTargetRefusedError('/svc/a', '127.0.0.1:9990'));
    assert.deepEqual([admin.status, admin.headers['prx-retryable']], [403, undefined]);
  });

  it('rejections and write failures are 502 and marked retryable', () => {
    const rejected = rendered(new MaxConcurrentRequestsError());
    assert.deepEqual([rejected.status, rejected.body, rejected.headers['prx-retryable']], [502, 'Max waiters exceeded', 'true']);
    const write = rendered(new WriteFailedError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' })));
    assert.deepEqual([write.status, write.body, write.headers['prx-retryable']], [502, 'connect ECONNREFUSED 127.0.0.1:1', 'true']);
    const upstream = rendered(new UpstreamFailureError(new Error('socket hang up')));
    assert.deepEqual([upstream.status, upstream.body, upstream.headers['prx-retryable']], [502, 'socket hang up', undefined]);
  });

  it('any other failure is a generic 502 with its message, or its class name when it has none', () => {
    assert.deepEqual(Object.values(ProxyErrorResponse.from(new Error('boom'))), [502, 'boom', false]);
    assert.deepEqual(Object.values(ProxyErrorResponse.from(new TypeError())), [502, 'TypeError', false]);
    assert.deepEqual(Object.values(ProxyErrorResponse.from('plain string')), [502, 'plain string', false]);
    assert.equal(rendered(new RangeError('bad')).status, 502);
  });

  it('every proxy error is a PrxError with a stable PRX_ERR_ code', () => {
    const errors: (ProxyError | TotalTimeoutError | AttemptTimeoutError)[] = [
      new UnknownDestinationError({ method: 'GET', uri: '/' }, 'r'),
      new InvalidDtabHeaderError('x'),
      new MaxCallDepthExceededError(1),
      new ConflictingContentLengthError('request'),
      new RichNoBrokersAvailableError({ service: '/s', baseDtab: readDtab(''), overrideDtab: readDtab('') }),
      new RichConnectionFailedError({ remote: 'a:1', service: '/s', client: 'unknown', addresses: [] }),
      new DynBoundTimeoutError(1, '/s'),
      new MaxConcurrentRequestsError(),
      new WriteFailedError(new Error('w')),
      new UpstreamFailureError(new Error('u')),
      new TotalTimeoutError(1),
      new AttemptTimeoutError(1),
    ];
    const codes = new Set(errors.map((e) => e.code));
    assert.equal(codes.size, errors.length);
    for (const e of errors) assert.match(e.code, /^PRX_ERR_[A-Z_]+$/);
  });
});

describe('renderError', () => {
  it('sets prx-err, text/plain, the byte length and the raw message as body', () => {
    const r = renderError(new UnknownDestinationError({ method: 'GET', uri: '/é' }, 'Host header is absent\nreally'));
    assert.equal(r.headers['content-type'], 'text/plain');
    assert.equal(r.headers['content-length'], String(Buffer.byteLength(r.body.toString())));
    assert.equal(r.body.toString(), 'Unknown destination: Request("GET /é", from 0.0.0.0/0.0.0.0:0) / Host header is absent\nreally');
    assert.equal(
      r.headers['prx-err'],
      'Unknown+destination%3A+Request%28%22GET+%2F%C3%A9%22%2C+from+0.0.0.0%2F0.0.0.0%3A0%29+%2F+Host+header+is+absent%0Areally',
    );
    assert.deepEqual(Object.keys(r.headers).sort(), ['content-length', 'content-type', 'prx-err']);
  });

  it('caps the header at maxHeadersKB and the body at maxErrResponseKB without splitting characters', () => {
    const r = renderError(new Error('é'.repeat(3000)), { maxHeadersKB: 1, maxErrResponseKB: 1 });
    assert.equal(r.headers['prx-err'], '%C3%A9'.repeat(170)); // 1020 bytes; one more escape would pass 1024
    assert.equal(r.body.length, 1024);
    assert.equal(r.body.toString('utf8'), 'é'.repeat(512));
    const odd = renderError(new Error('a' + 'é'.repeat(3000)), { maxErrResponseKB: 1 });
    assert.equal(odd.body.length, 1023);
    assert.equal(odd.headers['content-length'], '1023');
  });

  it('accepts a ready ProxyErrorResponse', () => {
    const r = renderError(new ProxyErrorResponse(503, 'busy', true));
    assert.deepEqual([r.status, r.body.toString(), r.headers['prx-retryable']], [503, 'busy', 'true']);
  });

  it('with clearContext keeps the status and sends no body and no prx-* headers', () => {
    const r = renderError(new MaxConcurrentRequestsError(), { clearContext: true });
    assert.equal(r.status, 502);
    assert.equal(r.body.length, 0);
    assert.deepEqual(r.headers, { 'content-length': '0' });
  });
});

describe('clearResponseContext', () => {
  it('strips prx-* headers and asks for an empty body when prx-err is present', () => {
    const h: HeaderMap = {
      'prx-err': 'x',
      'prx-retryable': 'true',
      'prx-success-class': '0.0',
      'content-type': 'text/plain',
      'content-length': '1',
      'x-app': 'keep',
    };
    assert.equal(clearResponseContext(h), true);
    assert.deepEqual(h, { 'content-length': '0', 'x-app': 'keep' });
  });

  it('leaves the body of an application response alone', () => {
    const h: HeaderMap = { 'prx-success-class': '1.0', 'content-type': 'text/html', 'content-length': '5' };
    assert.equal(clearResponseContext(h), false);
    assert.deepEqual(h, { 'content-type': 'text/html', 'content-length': '5' });
  });
});

describe('a rendered error on the wire', () => {
  it('is a valid HTTP response whose prx-err decodes to the body', async (t) => {
    const err = new RichNoBrokersAvailableError({ service: '/svc/ralph-machio', baseDtab: readDtab('/svc=>/#/io.prx.fs'), overrideDtab: readDtab('') });
    const server = createServer((_req, res) => {
      const r = renderError(err);
      res.writeHead(r.status, r.headers).end(r.body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => server.close());
    const { port } = server.address() as AddressInfo;
    const res = await new Promise<IncomingMessage>((resolve, reject) => get({ host: '127.0.0.1', port, path: '/' }, resolve).on('error', reject));
    const chunks: Buffer[] = [];
    for await (const c of res) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    assert.equal(res.statusCode, 502);
    assert.equal(res.headers['content-type'], 'text/plain');
    assert.equal(body, err.message);
    const header = res.headers['prx-err'];
    assert.equal(typeof header, 'string');
    assert.equal(decodeURIComponent((header as string).replaceAll('+', ' ')), body);
  });
});
