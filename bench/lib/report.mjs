// Renders the harness's results.json (../shared/bench, lib/report.js) as prx's benchmark tables:
// per section (HTTP/1.1, h2c) one row per target and concurrency, prx's ratios to its peers, and
// the targets of issue #4 (HTTP/1.1) and issue #17 (h2c) checked. Pure: takes the parsed JSON,
// returns Markdown.

/** Row order of the HTTP/1.1 table; `candidate` is prx (the harness names the candidate row so). */
export const TARGET_ORDER = ['direct', 'candidate', 'nginx', 'haproxy', 'node-http-proxy', 'fastify'];
/** Row order of the h2c table: nginx proxies h2c to HTTP/1.1, haproxy h2c end to end like prx. */
export const H2_TARGET_ORDER = ['direct', 'candidate', 'nginx', 'haproxy', 'fastify-h2c'];
const ORDER = { h1: TARGET_ORDER, h2: H2_TARGET_ORDER };

/** Issue #4's targets for the router with the full stack on, one proxy core. */
export const TARGETS = Object.freeze({
  rpsOverNodeHttpProxy: 2,
  cpuUsPerRequest: 40,
  p99MsAt16: 1.5,
  rssMB: 60, // decimal megabytes, as the issue writes them
});

/** Issue #17's targets for the h2 router (h2c in and out, full stack, one proxy core). */
export const H2_TARGETS = Object.freeze({
  rpsOverFastifyH2c: 3,
  rpsOverHaproxy: 0.35,
  p99Ms: 10,
});

const num = (v) => typeof v === 'number' && Number.isFinite(v);
const int = (v) => (num(v) ? Math.round(v).toLocaleString('en-US') : '–');
const ms = (us) => (num(us) ? (us / 1000).toFixed(us < 10000 ? 2 : 1) : '–');
const times = (v) => (num(v) ? `${v.toFixed(2)}×` : '–');
const mib = (kb) => (num(kb) ? (kb / 1024).toFixed(1) : '–');
const ratio = (a, b) => (num(a) && num(b) && b !== 0 ? a / b : null);

/** The rows of one section ('h1' or 'h2') of a results.json, keyed `target|conns`. */
function rowsByKey(results, section = 'h1') {
  const map = new Map();
  for (const r of results.results ?? []) if (r.section === section) map.set(`${r.target}|${r.conns}`, r);
  return map;
}

/** The label shown for a target. */
function label(target, candidateName) {
  return target === 'candidate' ? `**${candidateName}**` : target;
}

/** Machine and run facts as bullet lines. */
function facts(meta, resultsDir, withH1, withH2) {
  const p = meta.params ?? {};
  const v = meta.versions ?? {};
  const pin = meta.pinning ?? {};
  const gib = num(meta.mem_total_kb) ? Math.round(meta.mem_total_kb / 1048576) : '?';
  const lines = [
    `- Date (UTC): ${meta.date_utc}`,
    `- Machine: ${meta.nproc} CPU(s), ${meta.cpu_model}, kernel ${meta.kernel}, ${gib} GiB RAM; load average at start ${meta.loadavg_start}`,
    `- Pinning: ${pin.enabled ? `load generator and upstream on cpu${pin.loadgen_cpu}, proxy on cpu${pin.proxy_cpu}` : 'none'}`,
    `- Load: wrk, 1 thread, keep-alive, GET / with a ${p.body_bytes}-byte body from the ${p.upstream} upstream; ${p.duration_s} s per measurement after ${p.warmup_s} s warm-up; ${p.rounds} round(s), medians over clean rounds`,
    `- Versions: node ${v.node}; ${v.nginx}; ${v.haproxy}; ${Object.entries(v.npm_packages ?? {}).map(([k, q]) => `${k} ${q}`).join(', ')}`,
  ];
  if (!withH1) lines.splice(3, 1);
  if (withH2) {
    lines.splice(withH1 ? 4 : 3, 0, `- h2c load: h2load${v.h2load ? ` (${v.h2load})` : ''}, 1 thread, prior knowledge, ${p.h2_conns} connection(s) × ${p.h2_streams} streams, GET /; nginx proxies h2c to HTTP/1.1 upstream, haproxy and prx h2c end to end, the fastify h2c proxy h2c to HTTP/1.1`);
  }
  if (meta.candidate?.cmd) lines.push(`- prx: \`${meta.candidate.cmd}\` on port ${meta.candidate.port}${meta.candidate.h2_port ? ` (h2c: ${meta.candidate.h2_port})` : ''}`);
  if (resultsDir) lines.push(`- Harness results (results.md, results.json, raw runs): \`${resultsDir}\``);
  return lines;
}

/** A section's table: every target at every concurrency. */
function table(rows, conns, candidateName, section = 'h1') {
  const out = [
    '| target | conns | rps | p50 ms | p99 ms | p99.9 ms | errors | proxy CPU µs/req | proxy CPU % | proxy RSS MiB | clean rounds | limited by |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const c of conns) {
    for (const t of ORDER[section]) {
      const r = rows.get(`${t}|${c}`);
      if (!r) continue;
      // min–max over the rounds the median is taken from; one such round has no spread to show
      const spread = num(r.rps_min) && num(r.rps_max) && r.rps_max > r.rps_min ? ` (${int(r.rps_min)}–${int(r.rps_max)})` : '';
      out.push(
        `| ${label(t, candidateName)} | ${section === 'h2' ? `${c}×${r.streams}` : c} | ${int(r.rps)}${spread} | ${ms(r.lat_us?.p50)} | ${ms(r.lat_us?.p99)} | ${ms(r.lat_us?.p999)} | ${r.errors_total ?? '–'} | ` +
          `${t === 'direct' ? '–' : int(r.proxy_cpu_us_per_req)} | ${t === 'direct' ? '–' : int(r.proxy_cpu_pct)} | ${mib(r.proxy_rss_kb)} | ${r.rounds_clean}/${r.rounds} | ${r.bound ?? '–'} |`,
      );
    }
  }
  return out;
}

/** prx's throughput and p99 relative to each other target of a section, per concurrency. */
export function candidateRatios(results, section = 'h1') {
  const rows = rowsByKey(results, section);
  const out = [];
  for (const c of conns(results, section)) {
    const me = rows.get(`candidate|${c}`);
    if (!me) continue;
    const vs = {};
    for (const t of ORDER[section]) {
      if (t === 'candidate') continue;
      const peer = rows.get(`${t}|${c}`);
      vs[t] = { rps: ratio(me.rps, peer?.rps), p99: ratio(me.lat_us?.p99, peer?.lat_us?.p99) };
    }
    out.push({ conns: c, vs });
  }
  return out;
}

/** Issue #4's targets, each with the measured figure and whether it is met. */
export function targetChecks(results) {
  const rows = rowsByKey(results);
  const checks = [];
  for (const c of conns(results)) {
    const me = rows.get(`candidate|${c}`);
    if (!me) continue;
    const nhp = rows.get(`node-http-proxy|${c}`);
    const x = ratio(me.rps, nhp?.rps);
    checks.push({ what: `rps ≥ ${TARGETS.rpsOverNodeHttpProxy}× node-http-proxy at ${c} conns`, got: x === null ? '–' : `${x.toFixed(2)}×`, ok: x === null ? null : x >= TARGETS.rpsOverNodeHttpProxy });
    const cpu = me.proxy_cpu_us_per_req;
    checks.push({ what: `CPU ≤ ${TARGETS.cpuUsPerRequest} µs/request at ${c} conns`, got: num(cpu) ? `${cpu.toFixed(1)} µs` : '–', ok: num(cpu) ? cpu <= TARGETS.cpuUsPerRequest : null });
    if (c === 16) {
      const p99 = me.lat_us?.p99;
      checks.push({ what: `p99 ≤ ${TARGETS.p99MsAt16} ms at 16 conns`, got: `${ms(p99)} ms`, ok: num(p99) ? p99 / 1000 <= TARGETS.p99MsAt16 : null });
    }
    const rssKb = Math.max(me.proxy_rss_kb ?? 0, me.proxy_hwm_kb ?? 0) || null;
    const mb = num(rssKb) ? (rssKb * 1024) / 1e6 : null;
    checks.push({ what: `RSS ≤ ${TARGETS.rssMB} MB under load at ${c} conns (peak)`, got: mb === null ? '–' : `${mb.toFixed(1)} MB`, ok: mb === null ? null : mb <= TARGETS.rssMB });
  }
  return checks;
}

/** Issue #17's h2c targets, each with the measured figure and whether it is met (CPU: reported). */
export function h2TargetChecks(results) {
  const rows = rowsByKey(results, 'h2');
  const checks = [];
  for (const c of conns(results, 'h2')) {
    const me = rows.get(`candidate|${c}`);
    if (!me) continue;
    const at = `at ${c}×${me.streams}`;
    for (const [peer, min] of [['fastify-h2c', H2_TARGETS.rpsOverFastifyH2c], ['haproxy', H2_TARGETS.rpsOverHaproxy]]) {
      const x = ratio(me.rps, rows.get(`${peer}|${c}`)?.rps);
      checks.push({ what: `rps ≥ ${min}× ${peer} ${at}`, got: x === null ? '–' : `${x.toFixed(2)}×`, ok: x === null ? null : x >= min });
    }
    const p99 = me.lat_us?.p99;
    checks.push({ what: `p99 ≤ ${H2_TARGETS.p99Ms} ms ${at}`, got: `${ms(p99)} ms`, ok: num(p99) ? p99 / 1000 <= H2_TARGETS.p99Ms : null });
    const cpu = me.proxy_cpu_us_per_req;
    const peers = ['haproxy', 'fastify-h2c'].map((t) => `${t} ${int(rows.get(`${t}|${c}`)?.proxy_cpu_us_per_req)}`).join(', ');
    checks.push({ what: `CPU per request ${at} (reported; ${peers} µs)`, got: num(cpu) ? `${cpu.toFixed(1)} µs` : '–', ok: 'reported' });
  }
  return checks;
}

/** The concurrencies measured in a section, ascending. */
function conns(results, section = 'h1') {
  const set = new Set();
  for (const r of results.results ?? []) if (r.section === section) set.add(r.conns);
  return [...set].sort((a, b) => a - b);
}

/** prx's ratio table for one section. */
function ratioTable(ratios, section) {
  const peers = ORDER[section].filter((t) => t !== 'candidate');
  const lines = [`| conns | ${peers.map((t) => `rps ×${t}`).join(' | ')} | ${peers.map((t) => `p99 ×${t}`).join(' | ')} |`];
  lines.push(`|---:|${peers.map(() => '---:').join('|')}|${peers.map(() => '---:').join('|')}|`);
  for (const r of ratios) {
    lines.push(`| ${r.conns} | ${peers.map((t) => times(r.vs[t]?.rps)).join(' | ')} | ${peers.map((t) => times(r.vs[t]?.p99)).join(' | ')} |`);
  }
  return lines;
}

const checkRows = (checks) => ['| target | measured | met |', '|---|---:|:---:|', ...checks.map((c) => `| ${c.what} | ${c.got} | ${c.ok === null ? '?' : c.ok === 'reported' ? '–' : c.ok ? 'yes' : 'no'} |`)];

/** The h2c section: the table, prx's ratios and issue #17's targets. */
function h2Section(results, name) {
  const rows = rowsByKey(results, 'h2');
  const lines = ['## HTTP/2 cleartext (h2load; prx\'s h2 router)', '', ...table(rows, conns(results, 'h2'), name, 'h2'), ''];
  const ratios = candidateRatios(results, 'h2');
  if (ratios.length === 0) {
    lines.push(`**${name} was not measured in the h2c section** (its h2c check failed or it did not start: see \`run/candidate.log\` in the results folder).`, '');
    return lines;
  }
  lines.push(`### ${name} relative to the others, h2c (same run)`, '', ...ratioTable(ratios, 'h2'), '');
  lines.push('### Targets (issue #17, h2c)', '', ...checkRows(h2TargetChecks(results)), '');
  return lines;
}

/** The HTTP/1.1 section: the table, prx's ratios and issue #4's targets. */
function h1Section(results, name) {
  const rows = rowsByKey(results);
  const lines = [...table(rows, conns(results), name), ''];
  const ratios = candidateRatios(results);
  if (ratios.length === 0) {
    lines.push(`**${name} was not measured** (see the harness log and \`run/candidate.log\` in the results folder).`, '');
    return lines;
  }
  lines.push(`## ${name} relative to the others (same run)`, '', ...ratioTable(ratios, 'h1'));
  lines.push('', 'rps: higher is better; p99: lower is better.', '', `## Targets (issue #4)`, '', ...checkRows(targetChecks(results)), '');
  return lines;
}

/**
 * The whole Markdown report: the HTTP/1.1 section, then the h2c section, each when the results
 * hold it. `resultsDir` is where the harness wrote its own files (quoted in the report); throws
 * when the results hold no measurement at all.
 */
export function renderReport(results, resultsDir) {
  const meta = results.meta ?? {};
  const name = meta.candidate?.name || 'prx';
  const withH1 = rowsByKey(results, 'h1').size > 0;
  const withH2 = rowsByKey(results, 'h2').size > 0;
  if (!withH1 && !withH2) throw new Error('results.json has no measurements (neither HTTP/1.1 nor h2c rows)');
  const lines = [`# prx proxy benchmark — ${meta.date_utc ?? 'unknown date'}`, '', ...facts(meta, resultsDir, withH1, withH2), ''];
  if ((results.skipped ?? []).length) lines.push(`**Skipped** (failed to start or to proxy correctly): ${results.skipped.join(', ')}`, '');
  if (withH1) lines.push(...h1Section(results, name));
  if (withH2) lines.push(...h2Section(results, name));
  return `${lines.join('\n')}\n`;
}

/**
 * The `--workers N` section: prx with one process and with N workers at each concurrency, and the
 * scaling figure of issue #22, requests per proxy CPU-second (all of prx's processes) with N
 * workers over the one-process figure (target ≥ 0.9).
 */
export function workersSection(single, withWorkers, workers) {
  const one = rowsByKey(single, 'h1');
  const many = rowsByKey(withWorkers, 'h1');
  const perCpuSecond = (r) => (num(r?.proxy_cpu_us_per_req) && r.proxy_cpu_us_per_req > 0 ? 1e6 / r.proxy_cpu_us_per_req : undefined);
  const lines = [
    `## prx with \`workers: ${workers}\` (HTTP/1.1)`,
    '',
    'Same pinning as above: the primary and every worker share the proxy\'s core, so the figure that carries to more cores is requests per proxy CPU-second, summed over all of prx\'s processes.',
    '',
    '| conns | rps, 1 process | rps per CPU-s | rps, ' + workers + ' workers | rps per CPU-s | p99 ms, ' + workers + ' workers | RSS MiB, all processes | per CPU-s ratio |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const c of conns(withWorkers, 'h1')) {
    const a = one.get(`candidate|${c}`);
    const b = many.get(`candidate|${c}`);
    const ra = perCpuSecond(a);
    const rb = perCpuSecond(b);
    lines.push(`| ${c} | ${int(a?.rps)} | ${int(ra)} | ${int(b?.rps)} | ${int(rb)} | ${num(b?.lat_us?.p99) ? (b.lat_us.p99 / 1000).toFixed(2) : '–'} | ${mib(b?.proxy_rss_kb)} | ${times(ratio(rb, ra))} |`);
  }
  return `${lines.join('\n')}\n`;
}
