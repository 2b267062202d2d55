import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ManualScheduler,
  MetricsRegistry,
  clientServiceStats,
  clientStats,
  routerStats,
  serverStats,
  serviceStats,
} from '../../src/service/stats/index.js';
import { renderPrometheus } from '../../src/telemetry/index.js';

function setup(): { registry: MetricsRegistry; scheduler: ManualScheduler } {
  const scheduler = new ManualScheduler();
  return { registry: new MetricsRegistry({ scheduler }), scheduler };
}

/** Checks each line against the text format: comments, or `name{labels} value`. */
function assertValidExposition(text: string): void {
  const name = '[a-zA-Z_:][a-zA-Z0-9_:]*';
  const label = '[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\[\\\\"n])*"';
  const sample = new RegExp(`^${name}(?:\\{${label}(?:,${label})*\\})? (?:[-+]?[0-9.eE+-]+|NaN|[+-]Inf)$`);
  const type = new RegExp(`^# TYPE ${name} (?:counter|gauge|summary|histogram|untyped)$`);
  assert.ok(text.endsWith('\n'));
  const seen = new Set<string>();
  let current = '';
  for (const line of text.slice(0, -1).split('\n')) {
    if (line.startsWith('#')) {
      assert.match(line, type);
      current = line.split(' ')[2] as string;
      assert.ok(!seen.has(current), `family ${current} is not contiguous`);
      seen.add(current);
    } else {
      assert.match(line, sample);
      assert.ok(line.startsWith(current), `${line} outside its family ${current}`);
    }
  }
}

test('router scopes become rt/server/service/client labels', () => {
  const { registry } = setup();
  const rt = routerStats(registry.stats, 'incoming');
  serverStats(rt, '127.0.0.1', 4141).counter('requests').incr();
  serviceStats(rt, '/svc/dog').counter('requests').incr(2);
  const client = clientStats(rt, '/$/inet/127.1/8080');
  client.counter('requests').incr(3);
  clientServiceStats(client, '/svc/dog').counter('requests').incr(4);
  rt.counter('bindcache', 'path', 'misses').incr(5);
  const text = renderPrometheus(registry, 'prx_');
  assert.equal(
    text,
    [
      '# TYPE prx_rt:server:requests counter',
      'prx_rt:server:requests{rt="incoming",server="127.0.0.1/4141"} 1',
      '# TYPE prx_rt:service:requests counter',
      'prx_rt:service:requests{rt="incoming",service="svc/dog"} 2',
      '# TYPE prx_rt:client:requests counter',
      'prx_rt:client:requests{rt="incoming",client="$/inet/127.1/8080"} 3',
      '# TYPE prx_rt:client:service:requests counter',
      'prx_rt:client:service:requests{rt="incoming",client="$/inet/127.1/8080",service="svc/dog"} 4',
      '# TYPE prx_rt:bindcache:path:misses counter',
      'prx_rt:bindcache:path:misses{rt="incoming"} 5',
      '',
    ].join('\n'),
  );
  assertValidExposition(text);
});

test('lines of one family are grouped even when scopes interleave', () => {
  const { registry } = setup();
  const rt = routerStats(registry.stats, 'http');
  for (const id of ['a', 'b']) {
    const c = clientStats(rt, id);
    c.counter('requests').incr();
    c.settableGauge('connections').set(2);
  }
  const text = renderPrometheus(registry);
  assert.equal(
    text,
    [
      '# TYPE rt:client:requests counter',
      'rt:client:requests{rt="http",client="a"} 1',
      'rt:client:requests{rt="http",client="b"} 1',
      '# TYPE rt:client:connections gauge',
      'rt:client:connections{rt="http",client="a"} 2',
      'rt:client:connections{rt="http",client="b"} 2',
      '',
    ].join('\n'),
  );
  assertValidExposition(text);
});

test('failure breakdowns become an exception label; exn is exported as exceptions', () => {
  const { registry } = setup();
  const srv = serverStats(routerStats(registry.stats, 'http'), '0.0.0.0', 4140);
  srv.counter('failures').incr(3);
  srv.counter('failures', 'com.example.Timeout').incr(2);
  srv.counter('failures', 'com.example.Outer', 'com.example.Inner').incr(1);
  srv.counter('exn', 'java.io.IOException').incr(1);
  const text = renderPrometheus(registry);
  assert.equal(
    text,
    [
      '# TYPE rt:server:failures counter',
      'rt:server:failures{rt="http",server="0.0.0.0/4140"} 3',
      'rt:server:failures{rt="http",server="0.0.0.0/4140",exception="com.example.Timeout"} 2',
      'rt:server:failures{rt="http",server="0.0.0.0/4140",exception="com.example.Outer:com.example.Inner"} 1',
      '# TYPE rt:server:exceptions counter',
      'rt:server:exceptions{rt="http",server="0.0.0.0/4140",exception="java.io.IOException"} 1',
      '',
    ].join('\n'),
  );
  assertValidExposition(text);
});

test('histograms are summaries of the last snapshot', () => {
  const { registry, scheduler } = setup();
  const h = routerStats(registry.stats, 'http').stat('request_latency_ms');
  h.add(5);
  assert.equal(renderPrometheus(registry), '', 'omitted until the first snapshot');
  scheduler.advance(60_000);
  const text = renderPrometheus(registry);
  assert.equal(
    text,
    [
      '# TYPE rt:request_latency_ms summary',
      'rt:request_latency_ms{rt="http",quantile="0"} 5',
      'rt:request_latency_ms{rt="http",quantile="0.5"} 5',
      'rt:request_latency_ms{rt="http",quantile="0.9"} 5',
      'rt:request_latency_ms{rt="http",quantile="0.95"} 5',
      'rt:request_latency_ms{rt="http",quantile="0.99"} 5',
      'rt:request_latency_ms{rt="http",quantile="0.999"} 5',
      'rt:request_latency_ms{rt="http",quantile="0.9999"} 5',
      'rt:request_latency_ms{rt="http",quantile="1"} 5',
      'rt:request_latency_ms_sum{rt="http"} 5',
      'rt:request_latency_ms_count{rt="http"} 1',
      '# TYPE rt:request_latency_ms_avg gauge',
      'rt:request_latency_ms_avg{rt="http"} 5',
      '',
    ].join('\n'),
  );
  assertValidExposition(text);
  scheduler.advance(60_000);
  assert.equal(
    renderPrometheus(registry),
    '# TYPE rt:request_latency_ms summary\nrt:request_latency_ms_sum{rt="http"} 0\nrt:request_latency_ms_count{rt="http"} 0\n',
  );
});

test('label values are escaped per the format; names are sanitised', () => {
  const { registry } = setup();
  const rt = routerStats(registry.stats, 'we"ird\\rou\nter');
  rt.counter('status', '2XX').incr();
  registry.stats.settableGauge('9lives', 'a-b.c').set(1.5);
  registry.stats.gauge(['process', 'inf'], () => Infinity);
  const text = renderPrometheus(registry);
  assert.equal(
    text,
    [
      '# TYPE rt:status:2XX counter',
      'rt:status:2XX{rt="we\\"ird\\\\rou\\nter"} 1',
      '# TYPE _9lives:a_b_c gauge',
      '_9lives:a_b_c 1.5',
      '',
    ].join('\n'),
  );
  assertValidExposition(text);
});

test('series that sanitise to the same name are emitted once', () => {
  const { registry } = setup();
  registry.stats.counter('a-b').incr(1);
  registry.stats.counter('a.b').incr(2);
  registry.stats.settableGauge('a+b').set(3);
  assert.equal(renderPrometheus(registry), '# TYPE a_b counter\na_b 1\n');
});
