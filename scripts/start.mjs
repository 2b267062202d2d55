#!/usr/bin/env node
// `npm start`: the demo backend (examples/demo-backend.mjs, port $PORT or 8888), then `bin/prx`
// with examples/prx.yaml (or the config given as the first argument). Expects a build in dist/
// (`npm start` builds first, through the prestart script).
//
// Signals: SIGINT and SIGTERM go to the proxy, which drains and exits; the backend is stopped once
// the proxy is gone (so requests still draining reach it), and this script exits after both, with
// the proxy's status. Both children run in their own process groups, so a Ctrl-C reaches them only
// through this script, once: the terminal and npm each deliver it here, and prx treats a second
// signal as "exit now", so a copy arriving within DUPLICATE_SIGNAL_MS of the first is dropped. A
// later signal is passed on (a second Ctrl-C skips the drain).
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const config = process.argv[2] ?? 'examples/prx.yaml';
const DUPLICATE_SIGNAL_MS = 500;

/** @type {import('node:child_process').ChildProcess | undefined} */
let proxy;
let stopping = false;
let lastSignalAt = 0;
let status = 0;

const running = (child) => child !== undefined && child.exitCode === null && child.signalCode === null;

const backend = spawn(process.execPath, ['examples/demo-backend.mjs'], {
  cwd: root,
  stdio: ['ignore', 'pipe', 'inherit'],
  detached: true,
});
backend.stdout.pipe(process.stdout);
const backendGone = new Promise((resolve) => backend.once('exit', resolve));

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    const now = Date.now();
    if (stopping && now - lastSignalAt < DUPLICATE_SIGNAL_MS) return;
    stopping = true;
    lastSignalAt = now;
    if (running(proxy)) proxy.kill(signal);
    else if (proxy === undefined && running(backend)) backend.kill('SIGTERM');
  });
}

backend.once('exit', (code, signal) => {
  if (stopping || !running(proxy)) return;
  console.error(`start: the demo backend exited (${signal ?? `status ${code}`}); stopping the proxy`);
  stopping = true;
  status = 1;
  proxy.kill('SIGTERM');
});

// Start the proxy once the backend listens, so the first request through it finds a server.
const listening = await new Promise((resolve) => {
  backend.stdout.on('data', function onData(chunk) {
    if (!chunk.toString().includes('listening')) return;
    backend.stdout.off('data', onData);
    resolve(true);
  });
  backend.once('exit', () => resolve(false));
});
if (!listening || stopping) {
  if (!listening && !stopping) console.error('start: the demo backend exited before listening');
  if (running(backend)) backend.kill('SIGTERM');
  await backendGone;
  process.exitCode = stopping ? 0 : 1;
} else {
  proxy = spawn(`${root}bin/prx`, [config], { cwd: root, stdio: 'inherit', detached: true });
  const proxyStatus = await new Promise((resolve) => proxy.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
  if (running(backend)) backend.kill('SIGTERM');
  await backendGone;
  process.exitCode = status || proxyStatus;
}
