/**
 * The HTTP/2 settings of h2 servers and clients (spec: "h2 router, server and client parameters"):
 * their config keys and what prx's HTTP/2 sessions announce for them.
 */
import { z } from 'zod';
import { intInRange, positiveInt, lazySchema } from '../../config/index.js';
import type { H2SessionSettings } from './wire/client-session.js';
import type { H2ServerSettings } from './wire/server-session.js';

const MAX_WINDOW = 2 ** 31 - 1;

/** Keys shared by h2 servers and clients. */
export const h2SettingsShape = {
  /**
   * When a receive window is replenished: once the credit left falls to this share of the window
   * (servers and clients alike: both are prx's own HTTP/2).
   */
  windowUpdateRatio: lazySchema(() => z.number().gt(0, { error: 'expected a number strictly between 0 and 1' }).lt(1, { error: 'expected a number strictly between 0 and 1' }).default(0.99)),
  headerTableBytes: lazySchema(() => intInRange(0, 2 ** 32 - 1).optional()),
  // At least 1: a window of 0 would let no DATA through (credit returns only as data is read).
  initialStreamWindowBytes: lazySchema(() => intInRange(1, MAX_WINDOW).default(65_535)),
  maxFrameBytes: lazySchema(() => intInRange(16_384, 16_777_215).default(16_384)),
  // Spelled as Linkerd spells it.
  maxHeaderListByts: lazySchema(() => positiveInt.optional()),
};

/** The server-only key: SETTINGS_MAX_CONCURRENT_STREAMS (unlimited when absent). */
export const h2ServerSettingsShape = {
  ...h2SettingsShape,
  maxConcurrentStreamsPerConnection: lazySchema(() => intInRange(0, 2 ** 32 - 1).optional()),
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

/** What prx's own server session announces: the client's settings and the concurrency limit. */
export function serverSessionSettings(cfg: H2SettingsConfig): H2ServerSettings {
  return { ...clientSessionSettings(cfg), maxConcurrentStreams: cfg.maxConcurrentStreamsPerConnection };
}
