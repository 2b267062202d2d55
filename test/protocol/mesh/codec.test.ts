// The mesh API's messages: the generated descriptor matches the .proto files, and prx's naming
// values survive a round trip through the wire form.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { BoundName, type NameTree, Path, Var, address, addrBound, readDtab, readNameTree, showPathTree, showTree, type Addr } from '../../../src/naming/index.js';
import {
  addrToReplicas, boundTreeFromProto, boundTreeToProto, dtabFromProto, dtabToProto, pathTreeFromProto, pathTreeToProto, replicasToAddr,
  type PBoundNameTree, type PDtab, type PPathNameTree, type PReplicas,
} from '../../../src/protocol/mesh/convert.js';
import { bytesToIp, ipToBytes } from '../../../src/core/ip.js';
import { decodeMessage, encodeMessage } from '../../../src/protocol/mesh/messages.js';

test('the descriptor is generated from the current .proto files (node scripts/mesh-proto.mjs)', () => {
  const fresh = execFileSync(process.execPath, ['scripts/mesh-proto.mjs', '--print'], { encoding: 'utf8' });
  assert.equal(readFileSync('src/protocol/mesh/descriptor.ts', 'utf8'), fresh);
});

test('dtabs and path trees round-trip through the wire, wildcards and binary segments included', () => {
  const dtab = readDtab('/svc/*/x => /#/a | (/#/b & /#/c) | 0.3 * /#/d & 0.7 * ~;/\\x00\\xff => !;/e => $');
  const back = dtabFromProto(decodeMessage<{ dtab: PDtab }>('BindReq', encodeMessage('BindReq', { dtab: dtabToProto(dtab) })).dtab);
  assert.equal(back.show, dtab.show);
  const tree = readNameTree('/a | 2 * /b & /c');
  const wire = decodeMessage<{ tree: PPathNameTree }>('DelegateTreeReq', encodeMessage('DelegateTreeReq', { tree: pathTreeToProto(tree) }));
  assert.equal(showPathTree(pathTreeFromProto(wire.tree)), showPathTree(tree));
});

test('bound trees carry ids and residuals; the reader makes each leaf with its own address var', () => {
  const a = new BoundName(Path.utf8('#', 'fs', 'a'), Var.value<Addr>(addrBound([])), Path.utf8('rest'));
  const b = new BoundName(Path.utf8('#', 'fs', 'b'), Var.value<Addr>(addrBound([])));
  const union = { type: 'union' as const, trees: [{ weight: 2, tree: { type: 'leaf' as const, value: b } }, { weight: 0.5, tree: { type: 'leaf' as const, value: a } }] };
  const tree = { type: 'alt' as const, trees: [{ type: 'leaf' as const, value: a }, union] };
  const show = (t: NameTree<BoundName>): string => showTree(t, (n) => `${n.idStr}+${n.residual.show}`);
  const wire = decodeMessage<{ tree: PBoundNameTree }>('BoundTreeRsp', encodeMessage('BoundTreeRsp', { tree: boundTreeToProto(tree) }));
  const back = boundTreeFromProto(wire.tree, (id, residual) => new BoundName(id, Var.value<Addr>(addrBound([])), residual));
  assert.equal(show(back), show(tree));
  assert.equal(show(back), '/#/fs/a+/rest | 2.00*/#/fs/b+/ & 0.50*/#/fs/a+/rest');
  // An opaque (non-path) id has no wire form: Neg, as Linkerd sends.
  assert.deepEqual(boundTreeToProto({ type: 'leaf', value: new BoundName('opaque', Var.value<Addr>(addrBound([]))) }), { neg: {} });
  assert.throws(() => boundTreeFromProto({}, () => a), /no value/);
});

test('replicas: IPv4 and IPv6 endpoints, weights and metadata; host names are not sent', () => {
  const addr = addrBound([address('10.1.2.3', 80, 1, { nodeName: 'n' }), address('fe80::1:2', 443, 0.5), address('web.local', 80)], { zone: 'a' });
  const wire = decodeMessage<PReplicas>('Replicas', encodeMessage('Replicas', addrToReplicas(addr)));
  const back = replicasToAddr(wire);
  assert.equal(back.kind, 'bound');
  assert.deepEqual(back.kind === 'bound' && back.addresses.map((x) => [x.host, x.port, x.weight, x.meta]), [
    ['10.1.2.3', 80, 1, { nodeName: 'n' }],
    ['fe80::1:2', 443, 0.5, {}],
  ]);
  assert.deepEqual(back.kind === 'bound' && back.meta, { zone: 'a' });
  assert.equal(replicasToAddr({}).kind, 'neg');
  assert.equal(replicasToAddr({ pending: {} }).kind, 'pending');
  const failed = replicasToAddr({ failed: { message: 'boom' } });
  assert.equal(failed.kind === 'failed' && failed.error.message, 'boom');
  assert.throws(() => replicasToAddr({ bound: { endpoints: [{ address: Buffer.from([1, 2, 3]), port: 80 }] } }), /bad address/);
});

test('IP literals to bytes and back', () => {
  const cases: [string, string][] = [
    ['127.0.0.1', '127.0.0.1'],
    ['::1', '::1'],
    ['2001:db8:0:0:8:800:200c:417a', '2001:db8::8:800:200c:417a'],
    ['::ffff:10.0.0.1', '::ffff:a00:1'],
    ['fe80::', 'fe80::'],
  ];
  for (const [ip, shown] of cases) {
    const b = ipToBytes(ip);
    assert.equal(b?.bytes.length, ip.includes(':') ? 16 : 4, ip);
    assert.equal(bytesToIp(b?.bytes ?? Buffer.alloc(0)), shown);
  }
  assert.equal(ipToBytes('host.example'), undefined);
  assert.equal(bytesToIp(Buffer.alloc(5)), undefined);
});
