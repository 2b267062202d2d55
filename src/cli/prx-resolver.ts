import '../resolver/builtins.js';
import { createAdmin, registerMetricsEndpoints, type Admin, type AdminEndpoint } from '../admin/index.js';
import { boundNamesEndpoint } from '../admin/naming/bound-names.js';
import { namerStateEndpoints } from '../admin/naming/namer-state.js';
import { type DelegationNamespace, delegatorEndpoint } from '../admin/naming/delegator.js';
import { registerResolverUi } from '../admin/ui/index.js';
import { ConfigError, ConfigReadError } from '../config/errors.js';
import { loadResolverConfig, resolverConfigJson, type ResolverConfig } from '../config/resolver-config.js';
import { errorMessage } from '../core/errors.js';
import { defaultLogRegistry } from '../core/log.js';
import { prxVersion } from '../core/version.js';
import { ResolverProcess, type ResolverParts } from '../resolver/process.js';
import { storedDtabs } from './resolver-ui.js';

const USAGE = `usage: prx-resolver <config.yaml|config.json|->
       prx-resolver --check <config>   validate the config and print it with defaults
       prx-resolver --version          print the version

Starts the resolver service: dtab storage, name resolution, its interfaces (e.g. the HTTP
controller on 127.0.0.1:4180) and the admin interface. SIGTERM or SIGINT shut it down gracefully.
`;

/** How long the admin's storage view waits for a namespace's dtab. */
const STORAGE_VIEW_TIMEOUT_MS = 2000;

/** Entry point of `bin/prx-resolver`. Exit codes: 2 usage, 1 bad config or failed start. */
export async function main(args: string[]): Promise<void> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(USAGE);
    return;
  }
  if (args.includes('--version') || args.includes('-v')) {
    process.stdout.write(`prx-resolver ${prxVersion()}\n`);
    return;
  }
  const check = args[0] === '--check';
  const rest = check ? args.slice(1) : args;
  if (rest.length !== 1 || (rest[0] as string).startsWith('--')) {
    process.stderr.write(`prx-resolver: expected one configuration file (or -)\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  let config: ResolverConfig;
  try {
    config = await loadResolverConfig(rest[0] as string);
  } catch (e) {
    if (!(e instanceof ConfigError || e instanceof ConfigReadError)) throw e;
    process.stderr.write(`prx-resolver: ${e.message}\n`);
    process.exitCode = 1;
    return;
  }
  if (check) {
    process.stdout.write(`${resolverConfigJson(config)}\n`);
    return;
  }
  await run(config);
}

async function run(config: ResolverConfig): Promise<void> {
  const logs = defaultLogRegistry;
  let proc: ResolverProcess;
  try {
    proc = await ResolverProcess.start(config, { logs, buildAdmin: resolverAdmin });
  } catch (e) {
    process.stderr.write(`prx-resolver: cannot start: ${errorMessage(e)}\n`);
    await exit(1);
    return;
  }
  let signalled = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (signalled) {
      // A second signal means "now".
      process.exit(1);
    }
    signalled = true;
    logs.get('prx.resolver').info({ signal }, 'shutdown requested by signal');
    void proc.shutdown();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  await proc.stopped;
  await exit(0);
}

/** Flushes the log and exits (a storage client may hold sockets that would keep the process up). */
async function exit(code: number): Promise<void> {
  await new Promise<void>((resolve) => defaultLogRegistry.root.flush(() => resolve()));
  process.exit(code);
}

/**
 * The resolver's admin interface: the proxy's, with the delegator at `/dtab/delegator.json`
 * (explaining delegations through the stored dtabs, to which a request's `dtab` is appended), the
 * metrics endpoints, `/bound-names.json`, `/namer_state/<prefix>.json` of namers with state, and for `io.prx.kvstore` storage the stored dtabs at
 * `/storage/<pathPrefix>.json`.
 */
export function resolverAdmin(parts: ResolverParts): Admin {
  const { admin: cfg } = parts.config;
  const admin = createAdmin({
    ip: cfg.ip,
    port: cfg.port,
    ...(cfg.tls ? { tls: { certPath: cfg.tls.certPath, keyPath: cfg.tls.keyPath, ...optional('caCertPath', cfg.tls.caCertPath) } } : {}),
    security: cfg.security,
    ...optional('socketOptions', cfg.socketOptions),
    logger: parts.logs.get('prx.admin'),
    logs: parts.logs,
    config: parts.config,
    shutdown: () => parts.shutdown(),
  });
  registerMetricsEndpoints(admin, parts.registry);
  admin.add({ ...delegatorEndpoint('/dtab/delegator.json', () => delegationNamespaces(parts)), category: 'ui' });
  admin.add(boundNamesEndpoint(() => parts.enumerating));
  for (const e of namerStateEndpoints(parts.namers)) admin.add(e);
  registerResolverUi(admin, { store: storedDtabs(parts) });
  const storage = parts.config.storage;
  if (storage.kind === 'io.prx.kvstore' && typeof storage['pathPrefix'] === 'string') {
    admin.add(storageEndpoint(`/storage${storage['pathPrefix']}.json`, parts));
  }
  return admin;
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return value === undefined ? {} : ({ [key]: value } as { [P in K]?: V });
}

/** Every stored namespace, explained through its stored dtab plus the request's. */
function delegationNamespaces(parts: ResolverParts): ReadonlyMap<string, DelegationNamespace> {
  return new Map(
    parts.namespaces().map((ns): [string, DelegationNamespace] => [
      ns,
      { source: parts.naming.interpreter, baseDtab: () => parts.naming.dtab(ns).toPromise(AbortSignal.timeout(STORAGE_VIEW_TIMEOUT_MS)) },
    ]),
  );
}

/** The stored dtabs with their versions, and the backend's health. */
function storageEndpoint(path: string, parts: ResolverParts): AdminEndpoint {
  return {
    path,
    method: 'GET',
    description: 'The dtabs in storage, with their versions (ETags)',
    handler: async () => {
      const dtabs: Record<string, { dtab: string; version: string } | null> = {};
      for (const ns of parts.namespaces()) {
        const v = await parts.store.observe(ns).toPromise(AbortSignal.timeout(STORAGE_VIEW_TIMEOUT_MS));
        dtabs[ns] = v === undefined ? null : { dtab: v.dtab.show, version: Buffer.from(v.version).toString('base64') };
      }
      return { contentType: 'application/json; charset=utf-8', body: JSON.stringify({ dtabs, health: parts.store.health() }) };
    },
  };
}
