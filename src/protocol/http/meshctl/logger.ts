/**
 * `loggers: [{kind: io.prx.orch.meshctl}]`: each identified request is reported to the mixer
 * (`Mixer.Report`: `response.code`, `response.duration`, `request.path`, `target.service`,
 * `source.labels`, `target.labels`) when it completes. Reports are sent in the background; a
 * mixer that is down costs nothing but the reports (a failure is logged once until one succeeds).
 *
 * ```yaml
 * loggers:
 * - kind: io.prx.orch.meshctl
 *   mixerHost: meshctl-mixer
 *   mixerPort: 9091
 * ```
 */
import type { StatsReceiver } from '../../../service/stats/index.js';
import { defineRequestLogger, type PolicyRequest, type RequestLogger } from '../request-policy.js';
import { MixerReports, acquireMixer, mixerKindSchema, type MixerHandle } from './mixer.js';
import { lazySchema } from '../../../config/index.js';

export const meshctlLoggerSchema = lazySchema(() => mixerKindSchema('io.prx.orch.meshctl'));

class MeshctlLogger implements RequestLogger {
  readonly #mixer: MixerHandle;
  readonly #reports: MixerReports;

  constructor(mixer: MixerHandle, stats: StatsReceiver) {
    this.#mixer = mixer;
    this.#reports = new MixerReports(mixer, stats);
  }

  completed(req: PolicyRequest, status: number, durationMs: number): void {
    this.#reports.send(req, status, durationMs);
  }

  close(): void {
    this.#mixer.release();
  }
}

defineRequestLogger({
  kind: 'io.prx.orch.meshctl',
  schema: meshctlLoggerSchema,
  create: (cfg, ctx) => new MeshctlLogger(acquireMixer(cfg.mixerHost, cfg.mixerPort), ctx.stats),
});
