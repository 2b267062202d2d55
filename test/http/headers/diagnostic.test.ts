import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfiguredNamersInterpreter, delegate, readDtab, readPath } from '../../../src/naming/index.js';
import {
  appendRouterContext,
  chunkedResponsePlaceholder,
  diagnosticDecision,
  dtabResolutionLines,
  formatRouterContext,
  parseMaxForwards,
} from '../../../src/protocol/http/headers/diagnostic.js';
import { renderError } from '../../../src/protocol/http/headers/error-response.js';
import { InvalidMaxForwardsError } from '../../../src/protocol/http/headers/proxy-errors.js';
import type { HeaderMap } from '../../../src/protocol/http/headers/types.js';

describe('Max-Forwards', () => {
  it('parses as Java Integer.parseInt', () => {
    assert.equal(parseMaxForwards(undefined), undefined);
    assert.equal(parseMaxForwards('0'), 0);
    assert.equal(parseMaxForwards('+7'), 7);
    assert.equal(parseMaxForwards('-1'), -1);
    assert.equal(parseMaxForwards('2147483647'), 2147483647);
    for (const bad of ['31qe', '', ' 1', '1.0', '2147483648', '0x10', 'ten']) {
      assert.throws(() => parseMaxForwards(bad), InvalidMaxForwardsError, bad);
    }
  });

  it('an unparsable value on a TRACE is a 400 "Invalid value for Max-Forwards header", whatever prx-add-context says', () => {
    for (const headers of [{ 'max-forwards': '31qe', 'prx-add-context': 'true' }, { 'max-forwards': '31qe' }]) {
      assert.throws(
        () => diagnosticDecision('TRACE', headers),
        (e: unknown) => {
          const r = renderError(e);
          assert.equal(r.status, 400);
          assert.equal(r.body.toString(), 'Invalid value for Max-Forwards header');
          return true;
        },
      );
    }
  });
});

describe('diagnosticDecision', () => {
  it('passes every request that is not a TRACE, without reading its headers', () => {
    const h: HeaderMap = { 'max-forwards': 'junk', 'prx-add-context': 'true' };
    assert.equal(diagnosticDecision('GET', h), 'pass');
    assert.equal(h['max-forwards'], 'junk');
  });

  it('answers locally at Max-Forwards 0, with context when asked', () => {
    assert.equal(diagnosticDecision('TRACE', { 'max-forwards': '0' }), 'answer');
    assert.equal(diagnosticDecision('TRACE', { 'max-forwards': '0', 'prx-add-context': 'true' }), 'answerWithContext');
    assert.equal(diagnosticDecision('TRACE', { 'max-forwards': '0', 'prx-add-context': 'TRUE' }), 'answerWithContext');
    assert.equal(diagnosticDecision('TRACE', { 'max-forwards': '0', 'prx-add-context': '1' }), 'answerWithContext');
    assert.equal(diagnosticDecision('TRACE', { 'max-forwards': '0', 'prx-add-context': 'yes' }), 'answer');
  });

  it('decrements Max-Forwards and forwards above 0', () => {
    const h: HeaderMap = { 'max-forwards': '3', 'prx-add-context': 'true' };
    assert.equal(diagnosticDecision('TRACE', h), 'forwardWithContext');
    assert.equal(h['max-forwards'], '2');
    const plain: HeaderMap = { 'max-forwards': '1' };
    assert.equal(diagnosticDecision('TRACE', plain), 'forward');
    assert.equal(plain['max-forwards'], '0');
  });

  it('without Max-Forwards forwards with context only when asked; a negative value is ignored', () => {
    const h: HeaderMap = { 'prx-add-context': 'true' };
    assert.equal(diagnosticDecision('TRACE', h), 'forwardWithContext');
    assert.deepEqual(h, { 'prx-add-context': 'true' });
    assert.equal(diagnosticDecision('TRACE', {}), 'pass');
    const neg: HeaderMap = { 'max-forwards': '-1', 'prx-add-context': 'true' };
    assert.equal(diagnosticDecision('TRACE', neg), 'pass');
    assert.equal(neg['max-forwards'], '-1');
  });
});

describe('router context block', () => {
  it('formats the block exactly as the reference', async () => {
    const tree = await delegate(new ConfiguredNamersInterpreter(), readDtab('/svc=>/srv;/srv=>/$/inet/127.1/8080'), readPath('/svc/dog'));
    const text = formatRouterContext({
      routerLabel: 'http',
      durationMs: 3.9,
      serviceName: '/svc/dog',
      clientName: '/$/inet/127.1/8080',
      addresses: ['127.0.0.1:8080'],
      selectedAddress: '127.0.0.1:8080',
      dtabResolution: dtabResolutionLines(tree, '/$/inet/127.1/8080'),
    });
    assert.equal(
      text,
      [
        '--- Router: http ---',
        'request duration: 3 ms',
        'service name: /svc/dog',
        'client name: /$/inet/127.1/8080',
        'addresses: [127.0.0.1:8080]',
        'selected address: 127.0.0.1:8080',
        'dtab resolution:',
        '  /svc/dog',
        '  /srv/dog (/svc=>/srv)',
        '  /$/inet/127.1/8080/dog (/srv=>/$/inet/127.1/8080)',
        '',
      ].join('\n'),
    );
  });

  it('lists several addresses and prints an empty resolution when nothing matched', () => {
    const text = formatRouterContext({
      routerLabel: 'r',
      durationMs: 0,
      serviceName: '/',
      clientName: '/',
      addresses: ['1.2.3.4:8080', '1.2.3.5:8080'],
      selectedAddress: '',
      dtabResolution: [],
    });
    assert.equal(text, '--- Router: r ---\nrequest duration: 0 ms\nservice name: /\nclient name: /\naddresses: [1.2.3.4:8080, 1.2.3.5:8080]\nselected address: \ndtab resolution:\n\n');
  });

  it('follows the branch of an alternative that reaches the client', async () => {
    const dtab = readDtab('/svc=>/$/inet/127.1/1 | /$/inet/127.1/2;/svc/cat=>~');
    const tree = await delegate(new ConfiguredNamersInterpreter(), dtab, readPath('/svc/dog'));
    assert.deepEqual(dtabResolutionLines(tree, '/$/inet/127.1/2'), ['  /svc/dog', '  /$/inet/127.1/2/dog (/svc=>/$/inet/127.1/1 | /$/inet/127.1/2)']);
    assert.deepEqual(dtabResolutionLines(tree, '/$/inet/127.1/1'), ['  /svc/dog', '  /$/inet/127.1/1/dog (/svc=>/$/inet/127.1/1 | /$/inet/127.1/2)']);
    assert.deepEqual(dtabResolutionLines(tree, '/$/inet/127.1/3'), []);
  });

  it('appends the block to a trimmed body after a blank line', () => {
    assert.equal(appendRouterContext('  request succeeded \n', 'BLOCK\n'), 'request succeeded\n\nBLOCK\n');
    assert.equal(appendRouterContext('', 'BLOCK\n'), '\n\nBLOCK\n');
  });

  it('replaces a chunked body with its headers, status and a note', () => {
    assert.equal(
      chunkedResponsePlaceholder([['transfer-encoding', 'chunked'], ['x-a', '1']], 200, 'OK'),
      'transfer-encoding: chunked\nx-a: 1\nHTTP 200 - OK\nDiagnostic trace encountered chunked response. Response content discarded.',
    );
    assert.equal(chunkedResponsePlaceholder([], 500, 'Internal Server Error'), '\nHTTP 500 - Internal Server Error\nDiagnostic trace encountered chunked response. Response content discarded.');
  });
});
