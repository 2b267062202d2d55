import { z } from 'zod';
import { filePath, kindShape, nonEmptyString, pathPattern, registerKind, lazySchema } from '../config/index.js';

// Client TLS kinds (family `clientTls`). Their factories return the validated config: the client
// that connects turns it into socket options for the id it serves (see tls-settings.ts).

/** `io.prx.noValidation`: TLS without verifying the server's certificate (tests, trusted networks). */
export const noValidationTls = registerKind({
  family: 'clientTls',
  kind: 'io.prx.noValidation',
  schema: lazySchema(() => z.strictObject({ ...kindShape('io.prx.noValidation') })),
  create: (cfg) => cfg,
});

/**
 * `io.prx.boundPath`: the expected server name depends on the destination. Each of `names` maps a
 * bound-id prefix with `{captures}` to a `commonNamePattern` that may use them; the first match wins.
 */
export const boundPathTls = registerKind({
  family: 'clientTls',
  kind: 'io.prx.boundPath',
  schema: lazySchema(() => z.strictObject({
    ...kindShape('io.prx.boundPath'),
    caCertPath: filePath.optional(),
    names: z.array(z.strictObject({ prefix: pathPattern, commonNamePattern: nonEmptyString })).min(1),
    /** With `strict` (Linkerd's default) an id no prefix matches fails instead of skipping validation. */
    strict: z.boolean().default(true),
  })),
  create: (cfg) => cfg,
});
