// The io.prx.orch.configMap interpreter against the fake orchestrator API: its config (and the
// experimental gate), binding through the ConfigMap's dtab and the router's, live edits, a
// malformed dtab (last good kept, error reported), a missing key or ConfigMap (empty dtab).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import '../../src/cli/builtins.js';
import { ConfigError, kindSlot, validate, validateProxyConfig } from '../../src/config/index.js';
import { Dtab, SystemNamer, readDtab, readPath } from '../../src/naming/index.js';
import { OrchConfigMapInterpreter, type OrchConfigMapInterpreterConfig, interpreterState } from '../../src/interpreter/index.js';
import { CONFIGMAPS, OrchInClusterError } from '../../src/protocol/orch/index.js';
import { constant } from '../../src/service/policy/index.js';
import { FakeOrchApi, inClusterEnvironment } from '../helpers/fake-orch-api.js';
import { MapNamer, PREFIX, eventually, showBound, untilShown } from './helpers.js';

const FAST = { backoff: constant(50) };

describe('io.prx.orch.configMap config', () => {
  it('is experimental: refused without experimental: true, at its key path', () => {
    assert.throws(
      () => validateProxyConfig({ routers: [{ protocol: 'http', interpreter: { kind: 'io.prx.orch.configMap', name: 'dtabs', filename: 'web' }, servers: [{ port: 4140 }] }] }),
      (e: unknown) =>
        e instanceof ConfigError &&
        e.issues.some((i) => i.path.join('.') === 'routers.0.interpreter' && /experimental/.test(i.message) && i.code === 'PRX_ERR_CONFIG_EXPERIMENTAL'),
    );
  });

  it('a half-configured pod (a token, no KUBERNETES_SERVICE_HOST) is a start-up error naming the kind', () => {
    const { serviceAccountDir } = inClusterEnvironment(new FakeOrchApi(), 't');
    const cfg = validate(kindSlot('interpreter'), { kind: 'io.prx.orch.configMap', experimental: true, name: 'dtabs', filename: 'web' }) as OrchConfigMapInterpreterConfig;
    assert.throws(
      () => new OrchConfigMapInterpreter(cfg, [], new SystemNamer(), { environment: { env: {}, serviceAccountDir } }),
      (e: unknown) => e instanceof OrchInClusterError && e.message.startsWith('io.prx.orch.configMap: '),
    );
  });

  it('defaults and required keys', () => {
    const slot = kindSlot('interpreter');
    assert.deepEqual(validate(slot, { kind: 'io.prx.orch.configMap', experimental: true, name: 'dtabs', filename: 'web' }), {
      kind: 'io.prx.orch.configMap',
      experimental: true,
      transformers: [],
      name: 'dtabs',
      filename: 'web',
      port: 8001,
      namespace: 'default',
    });
    const fails = (raw: Record<string, unknown>, text: string) =>
      assert.throws(() => validate(slot, { kind: 'io.prx.orch.configMap', experimental: true, ...raw }), (e: unknown) => e instanceof ConfigError && e.message.includes(text), text);
    fails({ filename: 'web' }, 'name: required key is missing');
    fails({ name: 'dtabs' }, 'filename: required key is missing');
    fails({ name: 'dtabs', filename: 'web', port: 70000 }, 'port:');
    fails({ name: 'dtabs', filename: 'web', dtabFile: '/x' }, 'dtabFile');
  });
});

describe('io.prx.orch.configMap against the API', () => {
  let api: FakeOrchApi;
  let n = 0;
  before(async () => {
    api = await new FakeOrchApi().start();
  });
  after(async () => {
    await api.close();
  });

  function setup(data: Record<string, string> | undefined) {
    const name = `dtabs-${++n}`;
    if (data !== undefined) api.put(CONFIGMAPS, { metadata: { name, namespace: 'prx' }, data });
    const namer = new MapNamer();
    for (const x of ['a', 'b', 'c']) namer.set(x, ['127.0.0.1:1']);
    const cfg = validate(kindSlot('interpreter'), { kind: 'io.prx.orch.configMap', experimental: true, name, filename: 'web', namespace: 'prx', host: '127.0.0.1', port: api.port }) as OrchConfigMapInterpreterConfig;
    const interp = new OrchConfigMapInterpreter(cfg, [{ prefix: PREFIX, namer }], new SystemNamer(), FAST);
    return { name, interp, put: (d: Record<string, string>) => api.put(CONFIGMAPS, { metadata: { name, namespace: 'prx' }, data: d }) };
  }

  it('binds through the ConfigMap dtab followed by the router/request dtab (which wins)', async () => {
    const { interp } = setup({ web: '/svc => /#/io.prx.test/a;\n/other => /#/io.prx.test/c;', unrelated: 'not a dtab' });
    try {
      await untilShown(interp.bind(Dtab.empty, readPath('/svc/x')), '/#/io.prx.test/a /x');
      await untilShown(interp.bind(readDtab('/svc=>/#/io.prx.test/b'), readPath('/svc')), '/#/io.prx.test/b');
      await untilShown(interp.bind(readDtab('/svc=>/#/io.prx.test/nothing'), readPath('/svc')), '/#/io.prx.test/a');
      await untilShown(interp.bind(Dtab.empty, readPath('/other')), '/#/io.prx.test/c');
      assert.equal((await interp.dtab.toPromise()).show, '/svc=>/#/io.prx.test/a;/other=>/#/io.prx.test/c');
    } finally {
      interp.close();
    }
  });

  it('edits apply live; a malformed edit keeps the last good dtab and says so; a good edit clears it', async () => {
    const { interp, put } = setup({ web: '/svc=>/#/io.prx.test/a' });
    const seen: string[] = [];
    const sub = interp.bind(Dtab.empty, readPath('/svc')).observe((s) => seen.push(showBound(s)));
    try {
      await eventually(() => seen.at(-1) === '/#/io.prx.test/a', 10_000, 'first dtab');
      put({ web: '/svc=>/#/io.prx.test/b' });
      await eventually(() => seen.at(-1) === '/#/io.prx.test/b', 10_000, 'the edit');
      put({ web: '/svc=>/#/io.prx.test/c;\n/svc =>> oops' });
      await eventually(() => interp.state().lastError !== null, 10_000, 'the error');
      const state = interp.state();
      assert.equal(state.dtab, '/svc=>/#/io.prx.test/b');
      assert.match(state.lastError?.message ?? '', /^config map prx\/dtabs-\d+ key web: .*line 2/);
      assert.equal(seen.at(-1), '/#/io.prx.test/b');
      assert.deepEqual(interpreterState(interp), state);
      put({ web: '/svc=>/#/io.prx.test/c' });
      await eventually(() => seen.at(-1) === '/#/io.prx.test/c', 10_000, 'the good edit');
      assert.equal(interp.state().lastError, null);
    } finally {
      sub.close();
      interp.close();
    }
  });

  it('a missing key, a deleted ConfigMap and one not there yet are an empty dtab; it follows their creation', async () => {
    const { name, interp, put } = setup({ other: '/svc=>/#/io.prx.test/a' });
    const seen: string[] = [];
    // With an empty ConfigMap dtab, the router's dtab alone binds.
    const sub = interp.bind(readDtab('/svc=>/#/io.prx.test/c'), readPath('/svc')).observe((s) => seen.push(showBound(s)));
    try {
      await eventually(() => seen.at(-1) === '/#/io.prx.test/c', 10_000, 'the router dtab alone');
      assert.deepEqual([interp.state().exists, interp.state().hasKey, interp.state().dtab], [true, false, '']);
      put({ web: '/svc=>/#/io.prx.test/a' });
      await eventually(() => interp.state().dtab === '/svc=>/#/io.prx.test/a', 10_000, 'the key added');
      assert.equal(seen.at(-1), '/#/io.prx.test/c', 'router dentries still win');
      api.remove(CONFIGMAPS, 'prx', name);
      await eventually(() => interp.state().exists === false, 10_000, 'the deletion');
      assert.equal(interp.state().dtab, '');
    } finally {
      sub.close();
      interp.close();
    }
    const late = setup(undefined);
    const lateSeen: string[] = [];
    const lateSub = late.interp.bind(Dtab.empty, readPath('/svc')).observe((s) => lateSeen.push(showBound(s)));
    try {
      await eventually(() => late.interp.state().exists === false, 10_000, 'the absent ConfigMap');
      assert.equal(lateSeen.at(-1), '~');
      late.put({ web: '/svc=>/#/io.prx.test/b' });
      await eventually(() => lateSeen.at(-1) === '/#/io.prx.test/b', 10_000, 'the created ConfigMap');
    } finally {
      lateSub.close();
      late.interp.close();
    }
  });

  it('a dtab malformed from the start is an empty dtab, with the error', async () => {
    const { interp } = setup({ web: '/svc => ' });
    const seen: string[] = [];
    const sub = interp.bind(Dtab.empty, readPath('/svc')).observe((s) => seen.push(showBound(s)));
    try {
      await eventually(() => seen.length > 0 && seen.at(-1) !== 'pending', 10_000, 'a binding');
      assert.equal(seen.at(-1), '~');
      assert.equal(interp.state().dtab, '');
      assert.match(interp.state().lastError?.message ?? '', /key web/);
    } finally {
      sub.close();
      interp.close();
    }
  });

  it('watches one object only while something is bound through it', async () => {
    const { interp } = setup({ web: '/svc=>/#/io.prx.test/a' });
    try {
      assert.equal(interp.state().watching, false);
      const sub = interp.bind(Dtab.empty, readPath('/svc')).observe(() => {});
      await eventually(() => api.openWatches(CONFIGMAPS) === 1, 10_000, 'the watch');
      const w = api.requests.filter((r) => r.path.includes('configmaps')).at(-1);
      assert.equal(w?.path, '/api/v1/namespaces/prx/configmaps');
      assert.match(w?.query.get('fieldSelector') ?? '', /^metadata\.name=dtabs-\d+$/);
      sub.close();
      await eventually(() => api.openWatches(CONFIGMAPS) === 0, 10_000, 'the watch to end');
      assert.equal(interp.state().watching, false);
      // Closing the interpreter (the proxy stopping) ends the watch even while something observes it.
      const again = interp.bind(Dtab.empty, readPath('/svc')).observe(() => {});
      await eventually(() => api.openWatches(CONFIGMAPS) === 1, 10_000, 'the watch again');
      interp.close();
      await eventually(() => api.openWatches(CONFIGMAPS) === 0, 10_000, 'the watch to end at close');
      again.close();
    } finally {
      interp.close();
    }
  });
});
