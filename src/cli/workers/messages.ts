/**
 * What the primary and its workers say to each other over the cluster IPC channel (structured
 * clone: `serialization: 'advanced'`, so buffers and typed arrays pass as they are).
 *
 * primary → worker: `start` once (the config text the primary validated, the worker's slot, the
 * log levels and tracing state set at run time so far), `request` (a metrics snapshot, or an
 * admin request to answer), `shutdown`.
 * worker → primary: `hello` (it listens for messages: the primary answers with `start`), `ready` (its routers listen; what the primary's admin needs to know of them)
 * or `failed` (it could not start), then `reply` to each request.
 */
import type { AdminEndpointInfo, AdminResponse, ForwardedAdminRequest } from '../../admin/index.js';
import type { UiRouter } from '../../admin/ui/index.js';
import type { LoggerLevel } from '../../core/log.js';
import type { SnapshotKnown, StatsSnapshot } from '../../service/stats/index.js';
import type { UsageSummary } from '../../telemetry/index.js';

export interface StartMessage {
  readonly type: 'start';
  /** 1-based slot; a restarted worker takes its predecessor's. */
  readonly slot: number;
  readonly configText: string;
  readonly configOrigin: string;
  /** Whether this worker registers the servers with the routers' announcers. */
  readonly announce: boolean;
  readonly logLevels: readonly LoggerLevel[];
  readonly tracing: boolean;
}

export type WorkerRequest =
  | { readonly op: 'stats'; readonly known?: SnapshotKnown | undefined }
  | { readonly op: 'admin'; readonly request: ForwardedAdminRequest };

export interface RequestMessage {
  readonly type: 'request';
  readonly id: number;
  readonly body: WorkerRequest;
}

export interface ShutdownMessage {
  readonly type: 'shutdown';
  readonly reason: string;
}

export type PrimaryMessage = StartMessage | RequestMessage | ShutdownMessage;

/** What the primary's admin needs of the routers (every worker runs the same config). */
export interface WorkerInfo {
  readonly endpoints: readonly AdminEndpointInfo[];
  readonly uiRouters: readonly UiRouter[];
  readonly usage: UsageSummary;
}

export type WorkerAnswer =
  | { readonly op: 'stats'; readonly snapshot: StatsSnapshot }
  | { readonly op: 'admin'; readonly response: AdminResponse };

export type WorkerMessage =
  | { readonly type: 'hello' }
  | { readonly type: 'ready'; readonly info: WorkerInfo }
  | { readonly type: 'failed'; readonly message: string }
  | { readonly type: 'reply'; readonly id: number; readonly answer?: WorkerAnswer; readonly error?: string };

/** Tells a message of this protocol from anything else arriving on the channel. */
export function isMessage<T extends { readonly type: string }>(value: unknown): value is T {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string';
}
