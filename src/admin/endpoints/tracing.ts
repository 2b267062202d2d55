import { negotiate, type AdminEndpoint } from '../handler.js';

/**
 * The process's tracing on/off switch (structurally `TracingSwitch` of `service/tracing.ts`, whose
 * global instance the admin assembly passes by default).
 */
export interface TracingToggle {
  readonly enabled: boolean;
  enable(): void;
  disable(): void;
}

/**
 * `/admin/tracing`: `?enable=true` / `?disable=true` flip the switch (enable wins when both are
 * given, as in `TracingSwitch.applyQuery`); every answer is the resulting state.
 */
export function tracingEndpoint(tracing: TracingToggle): AdminEndpoint {
  return {
    path: '/admin/tracing',
    description: 'Query `enable=true` enables tracing; `disable=true` disables it.',
    handler: (req) => {
      if (req.query.get('disable') === 'true') tracing.disable();
      if (req.query.get('enable') === 'true') tracing.enable();
      const { enabled } = tracing;
      return negotiate(req, {
        json: () => ({ enabled }),
        text: () => `tracing ${enabled ? 'enabled' : 'disabled'}`,
      });
    },
  };
}
