import {
  ConfigError,
  ConfigReadError,
  effectiveConfigJson,
  readConfigSource,
  validateConfigSource,
  validateProxyConfig,
  workerCount,
  type ConfigSource,
  type ProxyConfig,
} from '../config/index.js';
import { errorMessage, PrxError } from '../core/errors.js';
import { defaultLogRegistry, InvalidLogLevelError, parseLogLevel, ROOT_LOGGER } from '../core/log.js';
import { prxVersion } from '../core/version.js';
import { adoptExposedGc } from '../core/read-pacer.js';

const USAGE = `usage: prx [--log-level <level>] <config.yaml|config.json|->
       prx --check <config>   validate the config and print it with defaults
       prx --version          print the version

Reads the configuration from a file, or from standard input with '-'. Logs are JSON lines on
standard output; --log-level sets the root level (trace, debug, info, warn, error, fatal, off;
default info), and /logging.json on the admin interface changes levels at run time.
SIGTERM, SIGINT or POST /admin/shutdown drain gracefully within admin.shutdownGraceMs;
a second signal exits at once.
`;

interface Invocation {
  readonly check: boolean;
  readonly config: string;
  readonly logLevel: string | undefined;
}

/** A command line prx cannot run (exit status 2). */
class UsageError extends PrxError {
  constructor(message: string) {
    super('PRX_ERR_USAGE', message);
  }
}

function parseArgs(args: readonly string[]): Invocation {
  let check = false;
  let logLevel: string | undefined;
  const positional: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '--check') check = true;
    else if (arg === '--log-level') {
      logLevel = args[++i];
      if (logLevel === undefined) throw new UsageError('--log-level needs a level');
    } else if (arg.startsWith('--log-level=')) logLevel = arg.slice('--log-level='.length);
    else if (arg.startsWith('-') && arg !== '-') throw new UsageError(`unknown option ${arg}`);
    else positional.push(arg);
  }
  if (positional.length !== 1) {
    throw new UsageError(positional.length === 0 ? 'a config file (or -) is required' : 'exactly one config file is expected');
  }
  return { check, config: positional[0] as string, logLevel };
}

/** The running proxy as `serve` drives it: one process, or the primary of several workers. */
interface Serving {
  readonly shuttingDown: boolean;
  readonly closed: Promise<void>;
  shutdown(reason: string): Promise<void>;
  /** Ends at once what a graceful shutdown would wait for (the workers). */
  abort?(): void;
}

/** Loads the config; a bad one is reported on stderr (every issue, one per line) and is exit 1. */
async function loadOrReport(arg: string): Promise<{ config: ProxyConfig; source: ConfigSource } | undefined> {
  try {
    const source = await readConfigSource(arg);
    return { config: validateConfigSource(source, validateProxyConfig), source };
  } catch (e) {
    if (!(e instanceof ConfigError || e instanceof ConfigReadError)) throw e;
    process.stderr.write(`prx: ${e.message}\n`);
    process.exitCode = 1;
    return undefined;
  }
}

/** Flushes buffered log lines, then ends the process (within a second, even if stdout is stuck). */
function exitAfterLogs(code: number): void {
  process.exitCode = code;
  setTimeout(() => process.exit(code), 1000);
  defaultLogRegistry.root.flush(() => process.exit(code));
}

/**
 * Runs until shutdown: SIGTERM and SIGINT start a graceful drain (as does POST /admin/shutdown);
 * a signal during the drain, however it started, exits at once with status 1.
 */
async function serve(proxy: Serving): Promise<void> {
  const log = defaultLogRegistry.get('prx');
  const onSignal = (signal: NodeJS.Signals): void => {
    if (proxy.shuttingDown) {
      log.warn({ signal }, 'signal during shutdown; exiting now without waiting for the drain');
      proxy.abort?.();
      exitAfterLogs(1);
      return;
    }
    void proxy.shutdown(signal);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  await proxy.closed;
  exitAfterLogs(0);
}

/** Entry point of `bin/prx`. */
export async function main(args: string[]): Promise<void> {
  // bin/prx starts node with --expose-gc for this alone: scavenges paced by socket reads.
  adoptExposedGc();
  // A worker of a proxy with `workers` > 1 runs this same entry point with the same arguments;
  // its primary marks it in the environment and sends it the config.
  if (process.env['PRX_WORKER'] !== undefined && (await import('node:cluster')).default.isWorker) {
    const { runWorker } = await import('./workers/worker.js');
    await runWorker();
    return;
  }
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(USAGE);
    return;
  }
  if (args.includes('--version') || args.includes('-v')) {
    process.stdout.write(`prx ${prxVersion()}\n`);
    return;
  }
  let invocation: Invocation;
  try {
    invocation = parseArgs(args);
    if (invocation.logLevel !== undefined) defaultLogRegistry.setLevel(ROOT_LOGGER, parseLogLevel(invocation.logLevel));
  } catch (e) {
    if (!(e instanceof UsageError || e instanceof InvalidLogLevelError)) throw e;
    process.stderr.write(`prx: ${e.message}\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  // Plugins register their kinds on import; config validation looks them up. Loaded only now so
  // that usage errors answer without loading every plugin.
  await import('./builtins.js');
  const loaded = await loadOrReport(invocation.config);
  if (!loaded) return;
  const { config, source } = loaded;
  if (invocation.check) {
    process.stdout.write(`${effectiveConfigJson(config)}\n`);
    // Lint findings do not make the config invalid (it starts as is): stderr, exit status 0.
    const { configLintLines } = await import('./config-lint.js');
    for (const line of await configLintLines(config)) process.stderr.write(`prx: ${line}\n`);
    return;
  }
  let proxy: Serving;
  try {
    const count = workerCount(config);
    if (count === 1) {
      const { startProxy } = await import('./proxy-process.js');
      proxy = await startProxy(config);
    } else {
      const { startPrimary } = await import('./workers/primary.js');
      proxy = await startPrimary({ config, source, count, logs: defaultLogRegistry });
    }
  } catch (e) {
    defaultLogRegistry.get('prx').fatal({ err: e }, `prx cannot start: ${errorMessage(e)}`);
    process.stderr.write(`prx: cannot start: ${errorMessage(e)}\n`);
    exitAfterLogs(1);
    return;
  }
  await serve(proxy);
}
