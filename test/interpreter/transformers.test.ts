import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { ConfigError, kindSlot, lookupKind, validate } from '../../src/config/index.js';
import {
  Activity, type Addr, AddrNeg, BoundName, ConfiguredNamersInterpreter, type DelegateTree, Dentry, MutableVar, type NameInterpreter,
  type NameTree, Path, type State, SystemNamer, addrBound, address, leaf, readDtab, readPath,
} from '../../src/naming/index.js';
import {
  type InterpreterContext, IpSet, TransformedInterpreter, type Transformer, buildTransformers, createLocalhostTransformer,
  keepAddresses, transformDelegateTree, withTransformers,
} from '../../src/interpreter/index.js';
import { MapNamer, PREFIX, onlyLeaf, showAddr, showBound, until, untilAddr, untilShown } from './helpers.js';

const system = new SystemNamer();

function setup(transformerConfigs: readonly Record<string, unknown>[]) {
  const namer = new MapNamer();
  const ctx: InterpreterContext = { namers: [{ prefix: PREFIX, namer }], system };
  const cfg = validate(kindSlot('interpreter'), { kind: 'default', transformers: transformerConfigs });
  const def = lookupKind('interpreter', 'default');
  assert.ok(def);
  const interp = (def.create as (c: unknown, x: InterpreterContext) => NameInterpreter)(cfg, ctx);
  return { namer, interp, bind: (path: string, dtab = '/svc=>/#/io.prx.test') => interp.bind(readDtab(dtab), readPath(path)) };
}

test('transformer configs: defaults, required keys, unknown kinds', () => {
  const list = z.array(kindSlot('transformer'));
  assert.deepEqual(validate(list, [{ kind: 'io.prx.port', port: 4141 }, { kind: 'io.prx.localhost', prefix: '/local' }]), [
    { kind: 'io.prx.port', port: 4141 },
    { kind: 'io.prx.localhost', prefix: '/local' },
  ]);
  const fails = (raw: unknown, text: string) =>
    assert.throws(() => validate(list, raw), (e: unknown) => e instanceof ConfigError && e.message.includes(text), text);
  fails([{ kind: 'io.prx.port' }], '[0].port: required key is missing');
  fails([{ kind: 'io.prx.port', port: 70000 }], '[0].port: expected an integer from 1 to 65535');
  fails([{ kind: 'io.prx.specificHost' }], '[0].host: required key is missing');
  fails([{ kind: 'io.prx.replace', path: 'nope' }], "[0].path: invalid path: '/' expected but 'n' found at '[n]ope'");
  fails([{ kind: 'io.prx.const' }], '[0].path: required key is missing');
  fails([{ kind: 'io.prx.port', port: 1, extra: true }], '[0]');
  fails([{ kind: 'io.prx.nope' }], 'unknown transformer kind "io.prx.nope" (known kinds: io.prx.const, io.prx.localhost, io.prx.orch.daemonset, io.prx.orch.localnode, io.prx.port, io.prx.replace, io.prx.specificHost');
});

test('io.prx.port: ids get /%/io.prx.port/<port>, every address the port; updates flow; equal addresses collapse', async () => {
  const { namer, bind } = setup([{ kind: 'io.prx.port', port: 4141 }]);
  namer.set('hello', ['127.0.0.1:8080', '127.0.0.2:8081']);
  const act = bind('/svc/hello/rest');
  const s = await untilShown(act, '/%/io.prx.port/4141/#/io.prx.test/hello /rest');
  const b = onlyLeaf(s);
  assert.equal(b.idStr, '/%/io.prx.port/4141/#/io.prx.test/hello');
  await untilAddr(b.addr, '127.0.0.1:4141*1 127.0.0.2:4141*1');
  namer.set('hello', ['127.0.0.1:1', '127.0.0.1:2', '10.0.0.1:3']);
  await untilAddr(b.addr, '127.0.0.1:4141*1 10.0.0.1:4141*1');
  // Neg stays Neg: nothing to transform.
  assert.equal(showBound(await untilShown(bind('/svc/missing'), '~')), '~');
});

test('a configured prefix replaces the default one; /% is always in front', async () => {
  const { namer, bind } = setup([{ kind: 'io.prx.port', port: 7, prefix: '/ingress' }]);
  namer.set('a', ['127.0.0.1:1']);
  await untilShown(bind('/svc/a'), '/%/ingress/#/io.prx.test/a');
});

test('io.prx.localhost keeps this host\'s addresses (interfaces and host name); nothing local is Neg', async () => {
  const { namer, bind } = setup([{ kind: 'io.prx.localhost' }]);
  namer.set('mixed', ['127.0.0.1:80', '198.51.100.7:80', '[::ffff:127.0.0.1]:81']);
  namer.set('remote', ['198.51.100.7:80', '203.0.113.9:80']);
  const mixed = onlyLeaf(await untilShown(bind('/svc/mixed'), '/%/io.prx.localhost/#/io.prx.test/mixed'));
  await untilAddr(mixed.addr, '127.0.0.1:80*1 ::ffff:127.0.0.1:81*1');
  const remote = onlyLeaf(await untilShown(bind('/svc/remote'), '/%/io.prx.localhost/#/io.prx.test/remote'));
  await untilAddr(remote.addr, 'neg');
  // The remote address becomes local: the filter follows the namer.
  namer.set('remote', ['127.0.0.1:9', '203.0.113.9:80']);
  await untilAddr(remote.addr, '127.0.0.1:9*1');
});

test('io.prx.localhost: addresses are pending until the one-time lookup of local IPs finishes', async () => {
  let finish: (ips: string[]) => void = () => {};
  const lookups: number[] = [];
  const t = createLocalhostTransformer({ kind: 'io.prx.localhost' }, () => {
    lookups.push(1);
    return new Promise<string[]>((resolve) => (finish = resolve));
  });
  const addr = new MutableVar<Addr>(addrBound([address('10.9.9.9', 80), address('10.1.1.1', 80)]));
  const tree = t.transform(Activity.value(leaf(new BoundName(readPath('/#/x'), addr))));
  const b = onlyLeaf(await untilShown(tree, '/%/io.prx.localhost/#/x'));
  await untilAddr(b.addr, 'pending');
  finish(['10.9.9.9']);
  await untilAddr(b.addr, '10.9.9.9:80*1');
  addr.update(addrBound([address('10.1.1.1', 80)]));
  await untilAddr(b.addr, 'neg');
  assert.equal(lookups.length, 1, 'the local IPs are looked up once');
});

test('io.prx.specificHost keeps the host\'s addresses (literal or name); an unresolvable name fails them', async () => {
  const byName = setup([{ kind: 'io.prx.specificHost', host: 'localhost' }]);
  byName.namer.set('a', ['127.0.0.1:80', '10.1.1.1:80']);
  const a = onlyLeaf(await untilShown(byName.bind('/svc/a'), '/%/io.prx.specificHost/#/io.prx.test/a'));
  await untilAddr(a.addr, '127.0.0.1:80*1');

  const literal = setup([{ kind: 'io.prx.specificHost', host: '10.1.1.1' }]);
  literal.namer.set('a', ['127.0.0.1:80', '10.1.1.1:80', '10.1.1.1:81']);
  await untilAddr(onlyLeaf(await untilShown(literal.bind('/svc/a'), '/%/io.prx.specificHost/#/io.prx.test/a')).addr, '10.1.1.1:80*1 10.1.1.1:81*1');

  const bad = setup([{ kind: 'io.prx.specificHost', host: 'no-such-host.invalid' }]);
  bad.namer.set('a', ['127.0.0.1:80']);
  const badLeaf = onlyLeaf(await untilShown(bad.bind('/svc/a'), '/%/io.prx.specificHost/#/io.prx.test/a'));
  const final = await until<Addr>((cb) => badLeaf.addr.observe(cb), (v) => v.kind !== 'pending');
  assert.match(showAddr(final), /^failed: io\.prx\.specificHost: cannot resolve host 'no-such-host\.invalid': /);
});

test('IpSet matches IPv4-mapped and differently spelled IPv6 forms; host names never match', () => {
  const ips = new IpSet(['127.0.0.1', '2001:db8::1', 'fe80::1%eth0', 'not-an-ip']);
  assert.deepEqual(ips.ips, ['127.0.0.1', '2001:db8::1', 'fe80::1']);
  for (const yes of ['127.0.0.1', '::ffff:127.0.0.1', '2001:0db8:0:0:0:0:0:1', 'fe80::1']) assert.ok(ips.has(yes), yes);
  for (const no of ['127.0.0.2', 'localhost', '2001:db8::2', '']) assert.ok(!ips.has(no), no);
  const all = addrBound([address('127.0.0.1', 1)]);
  assert.equal(keepAddresses(all, ips), all, 'an unchanged set is the same object');
  assert.equal(keepAddresses(addrBound([]), ips), AddrNeg);
  assert.equal(keepAddresses(AddrNeg, ips), AddrNeg);
});

test('io.prx.replace: every leaf becomes the path (shape and weights kept); Neg stays Neg', async () => {
  const { namer, bind } = setup([{ kind: 'io.prx.replace', path: '/$/inet/127.0.0.1/9999' }]);
  namer.set('a', ['10.0.0.1:80']);
  namer.set('b', ['10.0.0.2:80']);
  const id = '/%/io.prx.replace/$/inet/127.0.0.1/9999';
  const s = await untilShown(bind('/svc/x', '/svc/x=>3*/#/io.prx.test/a & 1*/#/io.prx.test/b'), `3.00*${id} & ${id}`);
  assert.equal(s.kind === 'ok' ? s.value.type : '', 'union');
  await untilShown(bind('/svc/x', '/svc/x=>/#/io.prx.test/a | /#/io.prx.test/b'), id);
  const leafAddr = onlyLeaf(await untilShown(bind('/svc/a'), id)).addr;
  await untilAddr(leafAddr, '127.0.0.1:9999*1');
  await untilShown(bind('/svc/missing'), '~');
  await untilShown(bind('/svc/x', '/svc/x=>!'), '!');
});

test('io.prx.const: always the path, even for Neg; a failed binding stays failed', async () => {
  const { namer, bind } = setup([{ kind: 'io.prx.const', path: '/$/inet/127.0.0.1/7777/extra' }]);
  namer.set('a', ['10.0.0.1:80']);
  const id = '/%/io.prx.const/$/inet/127.0.0.1/7777/extra';
  const b = onlyLeaf(await untilShown(bind('/svc/a'), `${id} /extra`));
  await untilAddr(b.addr, '127.0.0.1:7777*1');
  await untilShown(bind('/svc/missing'), `${id} /extra`);
  const failedState = await until<State<NameTree<BoundName>>>((cb) => bind('/svc/x', '/svc/x=>/$/inet/not/a/port').observe(cb), (v) => v.kind !== 'pending');
  assert.match(showBound(failedState), /^failed: /);
});

test('a list is applied in order: each transformer prefixes the previous one\'s ids', async () => {
  const portFirst = setup([{ kind: 'io.prx.port', port: 4141 }, { kind: 'io.prx.specificHost', host: '127.0.0.1' }]);
  portFirst.namer.set('hello', ['127.0.0.1:8080', '10.0.0.1:8080']);
  const b1 = onlyLeaf(await untilShown(portFirst.bind('/svc/hello'), '/%/io.prx.specificHost/%/io.prx.port/4141/#/io.prx.test/hello'));
  await untilAddr(b1.addr, '127.0.0.1:4141*1');

  const hostFirst = setup([{ kind: 'io.prx.specificHost', host: '127.0.0.1' }, { kind: 'io.prx.port', port: 4141 }]);
  hostFirst.namer.set('hello', ['127.0.0.1:8080', '10.0.0.1:8080']);
  const b2 = onlyLeaf(await untilShown(hostFirst.bind('/svc/hello'), '/%/io.prx.port/4141/%/io.prx.specificHost/#/io.prx.test/hello'));
  await untilAddr(b2.addr, '127.0.0.1:4141*1');

  // const then port: the constant's address gets the port too.
  const constThenPort = setup([{ kind: 'io.prx.const', path: '/$/inet/127.0.0.1/1' }, { kind: 'io.prx.port', port: 2 }]);
  const b3 = onlyLeaf(await untilShown(constThenPort.bind('/svc/none'), '/%/io.prx.port/2/%/io.prx.const/$/inet/127.0.0.1/1'));
  await untilAddr(b3.addr, '127.0.0.1:2*1');
});

test('withTransformers: no transformers is the interpreter itself; the wrapper exposes the underlying one', () => {
  const inner = new ConfiguredNamersInterpreter([]);
  assert.equal(withTransformers(inner, []), inner);
  const ts = buildTransformers([{ kind: 'io.prx.port', port: 1 }], { system });
  const wrapped = withTransformers(inner, ts);
  assert.ok(wrapped instanceof TransformedInterpreter);
  assert.equal(wrapped.underlying, inner);
  assert.throws(() => buildTransformers([{ kind: 'io.prx.unregistered' }], { system }), { code: 'PRX_ERR_TRANSFORMER_UNKNOWN' });
});

test('transformDelegateTree shows per-leaf transformers as transformation nodes; replace cannot be shown', () => {
  const [port] = buildTransformers([{ kind: 'io.prx.port', port: 4141 }], { system }) as [Transformer];
  const [replace] = buildTransformers([{ kind: 'io.prx.replace', path: '/$/inet/127.0.0.1/1' }], { system }) as [Transformer];
  const bound = new BoundName(readPath('/#/io.prx.fs/hello'), new MutableVar<Addr>(addrBound([address('127.0.0.1', 80)])));
  const tree: DelegateTree<BoundName> = {
    type: 'delegate',
    path: readPath('/svc/hello'),
    dentry: Dentry.nop,
    tree: { type: 'leaf', path: readPath('/#/io.prx.fs/hello'), dentry: Dentry.nop, value: bound },
  };
  const out = transformDelegateTree(tree, [port]);
  assert.ok(out && out.type === 'delegate');
  const t = out.tree;
  assert.equal(t.type, 'transformation');
  if (t.type !== 'transformation') return;
  assert.equal(t.name, 'io.prx.port');
  assert.equal(t.path.show, '/#/io.prx.fs/hello');
  assert.equal(t.value, bound);
  assert.equal(t.tree.path.show, '/%/io.prx.port/4141/#/io.prx.fs/hello');
  assert.equal(transformDelegateTree(tree, [port, replace]), undefined);
  assert.ok(Path.of('%').concat(readPath('/a')).show === '/%/a');
});
