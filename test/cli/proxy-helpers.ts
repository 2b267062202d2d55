// Shared set-up of the in-process proxy tests: start a validated config, find a router's port,
// and a temporary fs-namer directory.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import '../../src/cli/builtins.js';
import { startProxy, type ProxyProcess, type ProxyProcessOptions } from '../../src/cli/proxy-process.js';
import { validateProxyConfig } from '../../src/config/index.js';
import { quietLogs, type MemoryLog } from '../admin/helpers.js';

/** An fs namer directory: `hello` is the backend, `world` an address nothing listens on. */
export function withDisco(backendPort: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'prx-disco-'));
  writeFileSync(join(dir, 'hello'), `127.0.0.1 ${backendPort}\n`);
  writeFileSync(join(dir, 'world'), '127.0.0.1 9 * 2\n');
  return dir;
}

export interface Started {
  readonly proxy: ProxyProcess;
  readonly sink: MemoryLog;
  readonly admin: string;
}

/** Validates `raw` and starts the proxy in-process with quiet, captured logs. */
export async function start(raw: Record<string, unknown>, options: Omit<ProxyProcessOptions, 'logs'> = {}): Promise<Started> {
  const { logs, sink } = quietLogs();
  const config = validateProxyConfig(raw);
  const proxy = await startProxy(config, { logs, usageEnvironment: { pid: 'test-pid', startTime: new Date(0) }, ...options });
  return { proxy, sink, admin: proxy.admin.url };
}

/** The port of a router's first server. */
export function routerPort(proxy: ProxyProcess, label: string): number {
  const port = proxy.addresses.find((a) => a.label === label)?.servers[0]?.port;
  assert.ok(port !== undefined, `router ${label} has a server`);
  return port;
}
export { freePort } from '../router/harness.js';
