// Real etcd and ZooKeeper servers for tests, started through scripts/services (see its README).
//
// `sharedEtcd()` / `sharedZooKeeper()` start one server of each kind per test process (node's
// test runner gives each file its own process) and stop it when the process exits; when
// PRX_TEST_ETCD (http://127.0.0.1:PORT) or PRX_TEST_ZK (127.0.0.1:PORT) is set, that server is
// used instead. `startEtcd()` / `startZooKeeper()` give a test a server of its own to stop and
// restart (fault tests). Missing packages (and python3-thriftpy, for the thrift router tests, and
// chromium, for the admin UI's browser tests) are
// installed with scripts/services/install.sh when
// PRX_TEST_INSTALL=1, or when CI is set and PRX_TEST_INSTALL is not 0; otherwise the first call
// throws with the command to run. Nothing is ever skipped.
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SCRIPTS = fileURLToPath(new URL('../../scripts/services/', import.meta.url));
const INSTALL_COMMAND = 'sudo bash scripts/services/install.sh';

/** A running server. `address` is what clients take: `http://127.0.0.1:P` (etcd) or `127.0.0.1:P` (ZooKeeper). */
export interface ServiceHandle {
  readonly address: string;
  readonly host: string;
  readonly port: number;
  readonly stateDir: string;
  /** Stops the server, keeping its data (for `restart`). */
  stop(): Promise<void>;
  /** Starts it again on the same port with the same data. */
  restart(): Promise<void>;
  /** Stops it and removes its data. */
  destroy(): Promise<void>;
}

// One state parent per process: `stop.sh` with no argument would stop every server in it.
let servicesDir: string | undefined;
const running = new Set<string>();

function ownServicesDir(): string {
  if (servicesDir === undefined) {
    servicesDir = mkdtempSync(join(tmpdir(), 'prx-test-services-'));
    const cleanUp = (): void => {
      // Synchronous on purpose: 'exit' handlers cannot wait for promises.
      for (const dir of running) spawnSync('bash', [join(SCRIPTS, 'stop.sh'), dir], { stdio: 'ignore' });
      running.clear();
      if (servicesDir !== undefined) rmSync(servicesDir, { recursive: true, force: true });
    };
    process.once('exit', cleanUp);
    // An interrupted or timed-out test run must not leave servers behind either.
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.once(signal, () => {
        cleanUp();
        process.exit(signal === 'SIGINT' ? 130 : 143);
      });
    }
  }
  return servicesDir;
}

function has(command: string): boolean {
  return spawnSync('bash', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

function missingPackages(): string[] {
  const missing: string[] = [];
  if (!has('etcd')) missing.push('etcd');
  if (!existsSync('/usr/share/java/zookeeper.jar')) missing.push('zookeeper');
  if (!has('java')) missing.push('java');
  if (!has('curl')) missing.push('curl');
  if (spawnSync('/usr/bin/python3', ['-c', 'import thriftpy'], { stdio: 'ignore' }).status !== 0) missing.push('python3-thriftpy');
  if (!existsSync('/usr/bin/chromium')) missing.push('chromium');
  return missing;
}

function installPermitted(): boolean {
  const flag = process.env['PRX_TEST_INSTALL'];
  if (flag === '0') return false;
  return flag === '1' || (process.env['CI'] ?? '') !== '';
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

let installed: Promise<void> | undefined;

/** Makes sure etcd and ZooKeeper are installed, installing them when permitted. */
export function ensureServicesInstalled(): Promise<void> {
  installed ??= (async () => {
    if (missingPackages().length === 0) return;
    if (!installPermitted()) {
      throw new Error(
        `test servers not installed (missing: ${missingPackages().join(', ')}); run: ${INSTALL_COMMAND}` +
          ' (or set PRX_TEST_INSTALL=1 to let the tests run it)',
      );
    }
    // Test files run in parallel processes: one installs, the others wait for its lock.
    const lock = join(tmpdir(), 'prx-services-install.lock');
    for (let waited = 0; ; waited += 500) {
      try {
        mkdirSync(lock);
        break;
      } catch {
        const stale = existsSync(lock) && Date.now() - statSync(lock).mtimeMs > 600_000;
        if (stale) rmSync(lock, { recursive: true, force: true });
        if (missingPackages().length === 0) return;
        if (waited > 600_000) throw new Error(`timed out waiting for ${lock}; run: ${INSTALL_COMMAND}`);
        await sleep(500);
      }
    }
    try {
      if (missingPackages().length === 0) return;
      const r = await run(join(SCRIPTS, 'install.sh'), {}, 600_000);
      if (r.code !== 0 || missingPackages().length > 0) {
        throw new Error(`${INSTALL_COMMAND} failed (exit ${r.code}): ${r.stderr.slice(-2000)}`);
      }
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  })();
  return installed;
}

function run(script: string, env: Record<string, string>, timeout: number, args: string[] = []): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('bash', [script, ...args], { env: { ...process.env, ...env }, timeout }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

type Kind = 'etcd' | 'zookeeper';

async function startScript(kind: Kind, stateDir: string, port: number | undefined, env: Record<string, string>): Promise<string> {
  const script = join(SCRIPTS, kind === 'etcd' ? 'start-etcd.sh' : 'start-zookeeper.sh');
  const stateVar = kind === 'etcd' ? 'ETCD_STATE_DIR' : 'ZK_STATE_DIR';
  const args = port === undefined ? [] : [String(port)];
  const r = await run(script, { SERVICES_DIR: ownServicesDir(), [stateVar]: stateDir, ...env }, 120_000, args);
  if (r.code !== 0) throw new Error(`${script} failed (exit ${r.code}):\n${r.stderr}`);
  running.add(stateDir);
  return r.stdout.trim();
}

async function stopScript(stateDir: string, keep: boolean): Promise<void> {
  const r = await run(join(SCRIPTS, 'stop.sh'), keep ? { KEEP_STATE: '1' } : {}, 60_000, [stateDir]);
  running.delete(stateDir);
  if (r.code !== 0) throw new Error(`stop.sh ${stateDir} failed (exit ${r.code}):\n${r.stderr}`);
}

/** Starts a server of `kind` in a state dir of its own. `env` adds script knobs (e.g. ZK_TICK_TIME). */
async function startOwn(kind: Kind, env: Record<string, string> = {}): Promise<ServiceHandle> {
  await ensureServicesInstalled();
  const stateDir = join(ownServicesDir(), `${kind}-${running.size}-${Date.now()}`);
  let address = await startScript(kind, stateDir, undefined, env);
  const port = Number(/:(\d+)$/.exec(address)?.[1]);
  let up = true;
  return {
    get address() {
      return address;
    },
    host: '127.0.0.1',
    port,
    stateDir,
    async stop() {
      if (!up) return;
      up = false;
      await stopScript(stateDir, true);
    },
    async restart() {
      if (up) await stopScript(stateDir, true);
      address = await startScript(kind, stateDir, port, env);
      up = true;
    },
    async destroy() {
      up = false;
      await stopScript(stateDir, false);
    },
  };
}

/** A server of its own for this test: stop, restart and destroy it at will. */
export function startEtcd(env: Record<string, string> = {}): Promise<ServiceHandle> {
  return startOwn('etcd', env);
}

/** A ZooKeeper of its own; `{ZK_TICK_TIME: '200'}` allows sessions as short as 400 ms. */
export function startZooKeeper(env: Record<string, string> = {}): Promise<ServiceHandle> {
  return startOwn('zookeeper', env);
}

/** Where a shared server listens. */
export interface SharedService {
  readonly address: string;
  readonly host: string;
  readonly port: number;
}

function fromAddress(address: string): SharedService {
  const m = /^(?:https?:\/\/)?([^:/]+):(\d+)\/?$/.exec(address);
  if (!m) throw new Error(`cannot read host:port from ${JSON.stringify(address)}`);
  return { address, host: m[1] as string, port: Number(m[2]) };
}

let etcd: Promise<SharedService> | undefined;
let zk: Promise<SharedService> | undefined;

/** This process's etcd (PRX_TEST_ETCD, else one started for it). */
export function sharedEtcd(): Promise<SharedService> {
  const given = process.env['PRX_TEST_ETCD'];
  etcd ??= given ? Promise.resolve(fromAddress(given)) : startEtcd().then((h) => fromAddress(h.address));
  return etcd;
}

/** This process's ZooKeeper (PRX_TEST_ZK, else one started for it). */
export function sharedZooKeeper(): Promise<SharedService> {
  const given = process.env['PRX_TEST_ZK'];
  zk ??= given ? Promise.resolve(fromAddress(given)) : startZooKeeper().then((h) => fromAddress(h.address));
  return zk;
}
