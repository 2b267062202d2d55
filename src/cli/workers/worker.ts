/**
 * A worker process of a proxy with `workers` > 1: it runs everything the config describes except
 * the admin interface's socket and usage reporting (the primary's), and answers the primary's
 * requests: metrics snapshots, and admin requests for the views only the routers can answer.
 */
import { validateConfigSource, validateProxyConfig } from '../../config/index.js';
import { errorMessage } from '../../core/errors.js';
import { defaultLogRegistry } from '../../core/log.js';
import { SnapshotSource } from '../../service/stats/index.js';
import { tracingSwitch } from '../../service/tracing.js';
import type { ProxyProcess } from '../proxy-process.js';
import { isMessage, type PrimaryMessage, type StartMessage, type WorkerAnswer, type WorkerMessage, type WorkerRequest } from './messages.js';

function send(message: WorkerMessage): void {
  process.send?.(message);
}

/** Waits for the primary's `start` (after saying `hello`, so the message cannot arrive unheard). */
function awaitStart(): Promise<StartMessage> {
  return new Promise((resolve) => {
    const onMessage = (m: unknown): void => {
      if (isMessage<PrimaryMessage>(m) && m.type === 'start') {
        process.off('message', onMessage);
        resolve(m);
      }
    };
    process.on('message', onMessage);
    send({ type: 'hello' });
  });
}

async function answer(proxy: ProxyProcess, stats: SnapshotSource, body: WorkerRequest, signal: AbortSignal): Promise<WorkerAnswer> {
  if (body.op === 'stats') return { op: 'stats', snapshot: stats.snapshot(body.known) };
  return { op: 'admin', response: await proxy.admin.server.handle(body.request, signal) };
}

/** Flushes buffered log lines, then exits (within a second, even if stdout is stuck). */
function exitAfterLogs(code: number): void {
  process.exitCode = code;
  setTimeout(() => process.exit(code), 1000).unref();
  defaultLogRegistry.root.flush(() => process.exit(code));
}

/** The worker's whole life: start as the primary says, serve, drain when told (or orphaned), exit. */
export async function runWorker(): Promise<void> {
  const start = await awaitStart();
  const logs = defaultLogRegistry;
  logs.root.setBindings({ worker: start.slot });
  for (const { logger, level } of start.logLevels) logs.setLevel(logger, level);
  if (start.tracing) tracingSwitch.enable();
  else tracingSwitch.disable();
  const log = logs.get('prx');
  let proxy: ProxyProcess;
  try {
    await import('../builtins.js');
    // The primary validated this text already: an error here would be a bug, and is reported as a start failure.
    const config = validateConfigSource({ text: start.configText, origin: start.configOrigin }, validateProxyConfig);
    const { startProxy } = await import('../proxy-process.js');
    proxy = await startProxy(config, { worker: { slot: start.slot, announce: start.announce } });
  } catch (e) {
    log.fatal({ err: e }, `prx worker cannot start: ${errorMessage(e)}`);
    send({ type: 'failed', message: errorMessage(e) });
    exitAfterLogs(1);
    return;
  }
  const closing = new AbortController();
  const stats = new SnapshotSource(proxy.registry);
  process.on('message', (m: unknown) => {
    if (!isMessage<PrimaryMessage>(m)) return;
    if (m.type === 'shutdown') void proxy.shutdown(m.reason);
    else if (m.type === 'request') {
      answer(proxy, stats, m.body, closing.signal).then(
        (a) => send({ type: 'reply', id: m.id, answer: a }),
        (e: unknown) => send({ type: 'reply', id: m.id, error: errorMessage(e) }),
      );
    }
  });
  // The primary coordinates shutdown; a signal sent to the whole process group (Ctrl-C) starts
  // this worker's drain at once, as the primary would ask.
  const onSignal = (signal: NodeJS.Signals): void => void proxy.shutdown(signal);
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  // A primary that is gone (killed) leaves no one to route admin or restart: drain and exit.
  process.on('disconnect', () => {
    closing.abort();
    void proxy.shutdown('primary gone');
  });
  send({ type: 'ready', info: { endpoints: proxy.admin.server.endpoints(), uiRouters: proxy.uiRouters(), usage: proxy.usageSummary() } });
  await proxy.closed;
  exitAfterLogs(0);
}
