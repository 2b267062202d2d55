import { z } from 'zod';
import { addIssue, lazySchema } from '../../config/index.js';
import { type Backoff, RetryTimer, jittered } from '../../service/policy/index.js';

export { RetryTimer };

/** How long watch loops wait before retrying a failed backend: 100 ms growing to 10 s (decorrelated jitter). */
export const DEFAULT_WATCH_BACKOFF: Backoff = jittered(100, 10_000);

/**
 * A key prefix for the key-value stores: absolute, without a trailing `/` or empty segments
 * (`/namerd/dtabs`); a namespace's key is `<pathPrefix>/<ns>`.
 */
export const keyPathPrefix = lazySchema(() => z.string().superRefine((text, ctx) => {
  if (!/^(\/[^/\s]+)+$/.test(text)) {
    addIssue(ctx, [], 'expected an absolute key prefix such as /namerd/dtabs (no trailing "/", no empty segments)', {
      value: text,
    });
  }
}));
