/**
 * `requestAuthorizers: [{kind: io.prx.orch.meshctl}]`: every request is checked with the mixer
 * (`Mixer.Check`, attributes in attributes.ts) before it is routed. A status other than OK refuses
 * it with the HTTP status mapped from the mixer's (403 for PERMISSION_DENIED, 401 for
 * UNAUTHENTICATED, 429 for RESOURCE_EXHAUSTED, …; a gRPC request gets the mixer's gRPC status);
 * a mixer that does not answer within 5 s refuses it with 500 (UNKNOWN), as Linkerd 1 failed
 * closed. Requests let through are reported (`Mixer.Report`) when they complete.
 *
 * ```yaml
 * requestAuthorizers:
 * - kind: io.prx.orch.meshctl
 *   mixerHost: meshctl-mixer
 *   mixerPort: 9091
 * ```
 */
import type { Counter, StatsReceiver } from '../../../service/stats/index.js';
import { defineRequestAuthorizer, type PolicyRequest, type RequestAuthorizer } from '../request-policy.js';
import { checkAttributes } from './attributes.js';
import { MeshctlDeniedError } from './errors.js';
import { MIXER_CALL_TIMEOUT_MS, MixerReports, acquireMixer, mixerKindSchema, type MixerHandle } from './mixer.js';
import { lazySchema } from '../../../config/index.js';

export const meshctlAuthorizerSchema = lazySchema(() => mixerKindSchema('io.prx.orch.meshctl'));

class MeshctlAuthorizer implements RequestAuthorizer {
  readonly #mixer: MixerHandle;
  readonly #reports: MixerReports;
  readonly #allowed: Counter;
  readonly #denied: Counter;
  readonly #unanswered: Counter;

  constructor(mixer: MixerHandle, stats: StatsReceiver) {
    this.#mixer = mixer;
    this.#reports = new MixerReports(mixer, stats);
    this.#allowed = stats.counter('meshctl', 'check', 'allowed');
    this.#denied = stats.counter('meshctl', 'check', 'denied');
    this.#unanswered = stats.counter('meshctl', 'check', 'unanswered');
  }

  async authorize(req: PolicyRequest): Promise<void> {
    const channel = await this.#mixer.channel();
    const status = await channel.check(checkAttributes(req), MIXER_CALL_TIMEOUT_MS);
    if (status.code === 0) {
      this.#allowed.incr();
      return;
    }
    // A mixer that gave no answer refuses too (UNKNOWN), counted apart from its refusals.
    (status.answered ? this.#denied : this.#unanswered).incr();
    throw new MeshctlDeniedError(status.code, status.message);
  }

  completed(req: PolicyRequest, status: number, durationMs: number): void {
    this.#reports.send(req, status, durationMs);
  }

  close(): void {
    this.#mixer.release();
  }
}

defineRequestAuthorizer({
  kind: 'io.prx.orch.meshctl',
  schema: meshctlAuthorizerSchema,
  create: (cfg, ctx) => new MeshctlAuthorizer(acquireMixer(cfg.mixerHost, cfg.mixerPort), ctx.stats),
});
