/**
 * The HTTP/2 settings of h2 servers and clients (spec: "h2 router, server and client parameters"):
 * their config keys and what node:http2 is given for them.
 */
import type { Settings } from 'node:http2';
import { z } from 'zod';
import { intInRange, positiveInt } from '../../config/index.js';
import type { H2SessionSettings } from './wire/client-session.js';

const MAX_WINDOW = 2 ** 31 - 1;

/** Keys shared by h2 servers and clients. */
export const h2SettingsShape = {
  /**
   * When a receive window is replenished: once the credit left falls to this share of the window.
   * Honoured by clients (prx's own HTTP/2 client); servers run on node's nghttp2, which replenishes
   * at half the window and offers no other ratio (README: h2 keys that select nothing).
   */
  windowUpdateRatio: z.number().gt(0, { error: 'expected a number strictly between 0 and 1' }).lt(1, { error: 'expected a number strictly between 0 and 1' }).default(0.99),
  headerTableBytes: intInRange(0, 2 ** 32 - 1).optional(),
  initialStreamWindowBytes: intInRange(0, MAX_WINDOW).default(65_535),
  maxFrameBytes: intInRange(16_384, 16_777_215).default(16_384),
  // Spelled as Linkerd spells it.
  maxHeaderListByts: positiveInt.optional(),
};

/** The server-only key: SETTINGS_MAX_CONCURRENT_STREAMS (unlimited when absent). */
export const h2ServerSettingsShape = {
  ...h2SettingsShape,
  maxConcurrentStreamsPerConnection: intInRange(0, 2 ** 32 - 1).optional(),
};

export interface H2SettingsConfig {
  readonly windowUpdateRatio: number;
  readonly headerTableBytes?: number | undefined;
  readonly initialStreamWindowBytes: number;
  readonly maxFrameBytes: number;
  readonly maxHeaderListByts?: number | undefined;
  readonly maxConcurrentStreamsPerConnection?: number | undefined;
}

/**
 * The connection-level receive window each session opens with. Per-stream windows do the
 * back-pressure; the connection window only has to let many streams move at once.
 */
export function connectionWindowBytes(cfg: H2SettingsConfig): number {
  return Math.min(MAX_WINDOW, Math.max(1 << 20, cfg.initialStreamWindowBytes * 16));
}

/** What prx's own client session announces and how it returns credit. */
export function clientSessionSettings(cfg: H2SettingsConfig): H2SessionSettings {
  return {
    initialWindowBytes: cfg.initialStreamWindowBytes,
    connectionWindowBytes: connectionWindowBytes(cfg),
    maxFrameBytes: cfg.maxFrameBytes,
    headerTableBytes: cfg.headerTableBytes ?? 4096,
    maxHeaderListBytes: cfg.maxHeaderListByts,
    windowUpdateRatio: cfg.windowUpdateRatio,
  };
}

/** The SETTINGS a node:http2 server session announces. */
export function nodeSettings(cfg: H2SettingsConfig): Settings {
  const s: Settings = { enablePush: false, initialWindowSize: cfg.initialStreamWindowBytes, maxFrameSize: cfg.maxFrameBytes };
  if (cfg.headerTableBytes !== undefined) s.headerTableSize = cfg.headerTableBytes;
  if (cfg.maxHeaderListByts !== undefined) s.maxHeaderListSize = cfg.maxHeaderListByts;
  if (cfg.maxConcurrentStreamsPerConnection !== undefined) s.maxConcurrentStreams = cfg.maxConcurrentStreamsPerConnection;
  return s;
}

/**
 * Session options beyond SETTINGS. Node caps a session's buffered memory at 10 MB and header
 * pairs at 128 by default: a proxy multiplexing large streams and gRPC metadata needs more room,
 * and flow control, not these caps, is what bounds it.
 */
export const SESSION_OPTIONS = { maxSessionMemory: 64, maxHeaderListPairs: 1024 } as const;
