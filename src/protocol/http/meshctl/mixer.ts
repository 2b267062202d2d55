/**
 * The mixer connection shared by every mesh-control authorizer and logger naming the same
 * `mixerHost:mixerPort` (Linkerd 1 memoized its mixer clients the same way). The gRPC client is
 * loaded on first use; the last release closes the channel.
 */
import { z } from 'zod';
import { kindShape, nonEmptyString, port } from '../../../config/index.js';
import { getLogger } from '../../../core/log.js';
import type { Counter, StatsReceiver } from '../../../service/stats/index.js';
import type { PolicyRequest } from '../request-policy.js';
import { reportAttributes } from './attributes.js';
import type { MixerChannel } from './mixer-client.js';

/** A Check or Report that has not answered by then counts as failed. */
export const MIXER_CALL_TIMEOUT_MS = 5000;

/** The config of both mesh-control mixer kinds (authorizer and logger). */
export function mixerKindSchema<K extends string>(kind: K) {
  return z.strictObject({
    ...kindShape(kind),
    mixerHost: nonEmptyString.default('meshctl-mixer'),
    mixerPort: port.default(9091),
  });
}

interface Shared {
  channel: Promise<MixerChannel> | undefined;
  users: number;
}

const channels = new Map<string, Shared>();

/** A handle on the shared channel to host:port; `release` once done with it. */
export interface MixerHandle {
  readonly target: string;
  channel(): Promise<MixerChannel>;
  release(): void;
}

export function acquireMixer(host: string, port: number): MixerHandle {
  const target = `${host}:${port}`;
  let shared = channels.get(target);
  if (shared === undefined) {
    shared = { channel: undefined, users: 0 };
    channels.set(target, shared);
  }
  shared.users++;
  const s = shared;
  let released = false;
  return {
    target,
    channel: () => (s.channel ??= import('./mixer-client.js').then((m) => new m.MixerChannel(host, port))),
    release: () => {
      if (released) return;
      released = true;
      if (--s.users > 0) return;
      channels.delete(target);
      void s.channel?.then((c) => c.close());
    },
  };
}

/**
 * Sends Reports in the background, counted in `meshctl/report/{sent,failures}` of the router; a
 * failure is logged once per run of failures, not per request.
 */
export class MixerReports {
  readonly #mixer: MixerHandle;
  readonly #sent: Counter;
  readonly #failures: Counter;
  #failing = false;

  constructor(mixer: MixerHandle, stats: StatsReceiver) {
    this.#mixer = mixer;
    this.#sent = stats.counter('meshctl', 'report', 'sent');
    this.#failures = stats.counter('meshctl', 'report', 'failures');
  }

  send(req: PolicyRequest, status: number, durationMs: number): void {
    void this.#mixer
      .channel()
      .then((c) => c.report(reportAttributes(req, status, durationMs), MIXER_CALL_TIMEOUT_MS))
      .then((err) => {
        (err === undefined ? this.#sent : this.#failures).incr();
        if (err !== undefined && !this.#failing) getLogger('prx.meshctl').warn({ mixer: this.#mixer.target, err }, 'meshctl: report failed');
        this.#failing = err !== undefined;
      });
  }
}
