// io.prx.orch.localnode: the /24 of POD_IP, or NODE_NAME with hostNetwork; start-up refused without them.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ConfigError, kindSlot, lookupKind, validate, validateProxyConfig } from '../../src/config/index.js';
import { AddrNeg, AddrPending, type NameInterpreter, SystemNamer, addrBound, addrFailed, address, readDtab, readPath } from '../../src/naming/index.js';
import {
  type InterpreterContext, createLocalnodeTransformer, keepLocalNode, localNodeFromEnv, subnet24,
} from '../../src/interpreter/index.js';
import '../../src/cli/builtins.js';
import { spawnCli } from '../helpers/run-cli.js';
import { MapNamer, PREFIX, onlyLeaf, showAddr, untilAddr, untilShown } from './helpers.js';

/** Runs `f` with the environment variables set (undefined deletes one), restoring them after. */
function withEnv<T>(vars: Readonly<Record<string, string | undefined>>, f: () => T): T {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  const apply = (vs: Record<string, string | undefined>) => {
    for (const [k, v] of Object.entries(vs)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
  apply(vars);
  try {
    return f();
  } finally {
    apply(saved);
  }
}

/** A default interpreter over a NodeNamer with the given transformers, validated as a config is. */
function setup(transformers: readonly Record<string, unknown>[], env: Readonly<Record<string, string | undefined>>) {
  const namer = new MapNamer();
  const ctx: InterpreterContext = { namers: [{ prefix: PREFIX, namer }], system: new SystemNamer() };
  const interp = withEnv(env, () => {
    const cfg = validate(kindSlot('interpreter'), { kind: 'default', transformers });
    const def = lookupKind('interpreter', 'default');
    assert.ok(def);
    return (def.create as (c: unknown, x: InterpreterContext) => NameInterpreter)(cfg, ctx);
  });
  return { namer, bind: (path: string) => interp.bind(readDtab('/svc=>/#/io.prx.test'), readPath(path)) };
}

const routerWith = (transformer: Record<string, unknown>) => ({
  routers: [{ protocol: 'http', servers: [{ port: 4140 }], interpreter: { kind: 'default', transformers: [transformer] } }],
});

/** The config error lines a proxy config gets with `env`, or [] when it is valid. */
function configIssues(raw: unknown, env: Readonly<Record<string, string | undefined>>): string[] {
  try {
    withEnv(env, () => validateProxyConfig(raw));
    return [];
  } catch (e) {
    assert.ok(e instanceof ConfigError, String(e));
    return e.lines;
  }
}

test('subnet24: IPv4 and IPv4-mapped literals have a /24; names and other IPv6 addresses do not', () => {
  assert.equal(subnet24('10.1.2.3'), '10.1.2');
  assert.equal(subnet24('::ffff:10.1.2.3'), '10.1.2');
  assert.equal(subnet24('::FFFF:10.1.2.3'), '10.1.2');
  for (const none of ['2001:db8::1', 'node-a.local', '10.1.2', '', '::ffff:10.1.2.300']) assert.equal(subnet24(none), undefined, none);
});

test('localnode keeps the addresses on the /24 of POD_IP; ids get /%/io.prx.orch.localnode/<POD_IP>; nothing left is Neg', async () => {
  const { namer, bind } = setup([{ kind: 'io.prx.orch.localnode' }], { POD_IP: '10.1.2.77' });
  namer.set('web', ['10.1.2.3:8080', '10.1.3.3:8080', '10.1.2.200:8081', '[::ffff:10.1.2.9]:8082', 'web.local:80']);
  const b = onlyLeaf(await untilShown(bind('/svc/web/x'), '/%/io.prx.orch.localnode/10.1.2.77/#/io.prx.test/web /x'));
  await untilAddr(b.addr, '10.1.2.3:8080*1 10.1.2.200:8081*1 ::ffff:10.1.2.9:8082*1');
  // The namer's updates flow through the filter, both ways.
  namer.set('web', ['10.1.3.3:8080', '10.1.4.4:8080']);
  await untilAddr(b.addr, 'neg');
  namer.set('web', ['10.1.2.4:9000']);
  await untilAddr(b.addr, '10.1.2.4:9000*1');
  // A configured prefix replaces the kind's; the IP still follows, as in Linkerd.
  const custom = setup([{ kind: 'io.prx.orch.localnode', prefix: '/node' }], { POD_IP: '10.1.2.77' });
  custom.namer.set('a', ['10.1.2.1:1']);
  await untilShown(custom.bind('/svc/a'), '/%/node/10.1.2.77/#/io.prx.test/a');
});

test('localnode with hostNetwork keeps the addresses whose nodeName metadata is NODE_NAME', async () => {
  const { namer, bind } = setup([{ kind: 'io.prx.orch.localnode', hostNetwork: true }], { NODE_NAME: 'node-a', POD_IP: undefined });
  namer.set('web', ['10.1.2.3:80@node-a', '10.1.2.4:80@node-b', '10.9.9.9:80@node-a', '10.1.2.5:80']);
  const b = onlyLeaf(await untilShown(bind('/svc/web'), '/%/io.prx.orch.localnode/node-a/#/io.prx.test/web'));
  // The subnet does not matter, and an address without a node name is not known to be local.
  await untilAddr(b.addr, '10.1.2.3:80*1 10.9.9.9:80*1');
  namer.set('web', ['10.1.2.4:80@node-b']);
  await untilAddr(b.addr, 'neg');
});

test('keepLocalNode passes Neg, Pending and Failed through and returns an unchanged set as is', () => {
  const local = localNodeFromEnv(false, { POD_IP: '192.168.7.1' });
  assert.ok(!(local instanceof Error));
  const all = addrBound([address('192.168.7.2', 1), address('192.168.7.3', 2)]);
  assert.equal(keepLocalNode(all, local), all);
  assert.equal(keepLocalNode(AddrNeg, local), AddrNeg);
  assert.equal(keepLocalNode(AddrPending, local), AddrPending);
  const failure = addrFailed(new Error('boom'));
  assert.equal(keepLocalNode(failure, local), failure);
  assert.equal(keepLocalNode(addrBound([]), local), AddrNeg);
  assert.equal(showAddr(keepLocalNode(addrBound([address('192.168.8.2', 1)]), local)), 'neg');
});

test('a missing or malformed POD_IP / NODE_NAME is a config error at the transformer\'s key path', () => {
  const prefix = 'routers[0].interpreter.transformers[0]';
  assert.deepEqual(configIssues(routerWith({ kind: 'io.prx.orch.localnode' }), { POD_IP: undefined }), [
    `${prefix}: io.prx.orch.localnode needs the environment variable POD_IP set to the IP of this pod (downward API: status.podIP)`,
  ]);
  assert.deepEqual(configIssues(routerWith({ kind: 'io.prx.orch.localnode' }), { POD_IP: '' }).length, 1);
  assert.deepEqual(configIssues(routerWith({ kind: 'io.prx.orch.localnode' }), { POD_IP: 'fd00::5' }), [
    `${prefix}: POD_IP must be an IPv4 address (the subnet compared is its /24; with IPv6 pods use hostNetwork: true and NODE_NAME), got "fd00::5"`,
  ]);
  assert.deepEqual(configIssues(routerWith({ kind: 'io.prx.orch.localnode', hostNetwork: true }), { NODE_NAME: undefined, POD_IP: '10.0.0.1' }), [
    `${prefix}.hostNetwork: hostNetwork: true needs the environment variable NODE_NAME set to the name of this node (downward API: spec.nodeName)`,
  ]);
  // hostNetwork mode does not need POD_IP, nor the subnet mode NODE_NAME.
  assert.deepEqual(configIssues(routerWith({ kind: 'io.prx.orch.localnode', hostNetwork: true }), { NODE_NAME: 'n1', POD_IP: undefined }), []);
  assert.deepEqual(configIssues(routerWith({ kind: 'io.prx.orch.localnode' }), { NODE_NAME: undefined, POD_IP: '10.0.0.1' }), []);
  // Plain key errors.
  assert.deepEqual(configIssues(routerWith({ kind: 'io.prx.orch.localnode', hostNetwork: 'yes' }), { POD_IP: '10.0.0.1' }), [
    `${prefix}.hostNetwork: expected true or false, got "yes"`,
  ]);
  assert.match(configIssues(routerWith({ kind: 'io.prx.orch.localnode', podIp: '10.0.0.1' }), { POD_IP: '10.0.0.1' }).join('\n'), /podIp/);
  // The factory refuses a variable that went away after validation.
  assert.throws(() => createLocalnodeTransformer({ kind: 'io.prx.orch.localnode', hostNetwork: true }, {}), {
    code: 'PRX_ERR_TRANSFORMER_LOCALNODE_ENV',
    message: /^io\.prx\.orch\.localnode: hostNetwork: true needs the environment variable NODE_NAME/,
  });
});

const dir = mkdtempSync(join(tmpdir(), 'prx-localnode-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('bin/prx without POD_IP does not start: exit 1, the key path and the reason on stderr', async () => {
  const path = join(dir, 'localnode.yaml');
  writeFileSync(
    path,
    [
      'routers:',
      '- protocol: http',
      '  servers: [{port: 4140}]',
      '  interpreter:',
      '    kind: default',
      '    transformers:',
      '    - kind: io.prx.orch.localnode',
      '',
    ].join('\n'),
  );
  const run = spawnCli('prx', [path], { env: { POD_IP: '' } });
  assert.equal(await run.exited, 1, run.stderr());
  assert.match(
    run.stderr(),
    /^ {2}routers\[0\]\.interpreter\.transformers\[0\]: io\.prx\.orch\.localnode needs the environment variable POD_IP/m,
  );
  const ok = spawnCli('prx', ['--check', path], { env: { POD_IP: '10.4.5.6' } });
  assert.equal(await ok.exited, 0, ok.stderr());
  const cfg = JSON.parse(ok.stdout()) as { routers: { interpreter: { transformers: unknown[] } }[] };
  assert.deepEqual(cfg.routers[0]?.interpreter.transformers, [{ kind: 'io.prx.orch.localnode', hostNetwork: false }]);
});
