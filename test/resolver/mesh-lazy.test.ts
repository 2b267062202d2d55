// protobufjs is loaded only by the gRPC interfaces and the mesh interpreter, grpc-js only by the
// mesh interpreter (the interfaces serve on prx's own HTTP/2 codec): a resolver or proxy that does
// not use them does not pay for them. Both packages are CommonJS, so once imported they show in
// the CommonJS module cache; each check runs in a fresh process.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';

function loadedAfter(script: string): string[] {
  const body = `
    import { createRequire } from 'node:module';
    ${script}
    const cache = Object.keys(createRequire(import.meta.url).cache);
    console.log(JSON.stringify([...new Set(cache.flatMap((k) => (/node_modules\\/(@grpc\\/[^/]+|protobufjs)\\//.exec(k) ?? []).slice(1)))]));
  `;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', body], { encoding: 'utf8' });
  return (JSON.parse(out.trim().split('\n').at(-1) ?? '[]') as string[]).sort();
}

test('registering every resolver and interpreter kind loads neither grpc-js nor protobufjs', () => {
  assert.deepEqual(loadedAfter(`await import('./src/resolver/builtins.ts'); await import('./src/interpreter/index.ts');`), []);
});

test('a listening mesh interface has loaded protobufjs (the check can fail) but not grpc-js', () => {
  const loaded = loadedAfter(`
    const { MeshInterface, meshInterfaceSchema } = await import('./src/resolver/interfaces/mesh.ts');
    const { LogRegistry } = await import('./src/core/log.ts');
    const { MetricsRegistry } = await import('./src/service/stats/index.ts');
    const logs = new LogRegistry({ destination: { write() {} } });
    const registry = new MetricsRegistry();
    const ctx = { store: undefined, naming: undefined, log: logs.get('x'), stats: registry.stats };
    const iface = new MeshInterface({ ...meshInterfaceSchema.parse({ kind: 'io.prx.mesh' }), port: 0 }, ctx);
    await iface.listen();
    await iface.close();
    registry.close();
  `);
  assert.deepEqual(loaded, ['protobufjs']);
});
