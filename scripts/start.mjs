#!/usr/bin/env node
// `npm start`: the demo backend (examples/demo-backend.mjs, port 8888), then `bin/prx` with
// examples/prx.yaml. SIGINT/SIGTERM go to the proxy, which drains and exits; the backend is
// stopped after it. Exits with the proxy's status. Expects a build (`npm run build`) in dist/.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const config = process.argv[2] ?? 'examples/prx.yaml';

const backend = spawn(process.execPath, ['examples/demo-backend.mjs'], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
backend.stdout.pipe(process.stdout);

// Start the proxy once the backend listens, so the first request through it finds a server.
await new Promise((resolve, reject) => {
  backend.stdout.on('data', function onData(chunk) {
    if (!chunk.toString().includes('listening')) return;
    backend.stdout.off('data', onData);
    resolve();
  });
  backend.once('exit', (code) => reject(new Error(`the demo backend exited (status ${code}) before listening`)));
}).catch((e) => {
  console.error(`start: ${e.message}`);
  process.exit(1);
});

const proxy = spawn(`${root}bin/prx`, [config], { cwd: root, stdio: 'inherit' });

// The terminal sends SIGINT to the whole process group; the proxy handles its own copy. A
// signal sent to this script alone (SIGTERM from a supervisor) is passed on.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    if (proxy.exitCode === null) proxy.kill(signal);
  });
}

backend.once('exit', (code) => {
  if (proxy.exitCode !== null) return;
  console.error(`start: the demo backend exited (status ${code}); stopping the proxy`);
  proxy.kill('SIGTERM');
});

proxy.once('exit', (code, signal) => {
  backend.kill('SIGTERM');
  process.exitCode = code ?? (signal ? 1 : 0);
});
