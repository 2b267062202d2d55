import { z } from 'zod';
import { parseNested } from './issues.js';
import { filePath, kindSlot, nonEmptyString, type KindConfig } from './schema.js';
import { lazySchema } from './lazy-schema.js';

/** Server TLS (servers and the admin interface): certificate and key files, optional client CA. */
export const serverTls = lazySchema(() => z.strictObject({
  certPath: filePath,
  keyPath: filePath,
  caCertPath: filePath.optional(),
}));

/** A validated server TLS object. */
export type ServerTlsConfig = z.output<typeof serverTls>;

/**
 * Plain client TLS: the expected server name (may reference `{name}` captures of a static
 * config's prefix), a CA bundle, or no validation at all.
 */
export const plainClientTls = lazySchema(() => z.strictObject({
  commonName: nonEmptyString.optional(),
  caCertPath: filePath.optional(),
  disableValidation: z.boolean().default(false),
}));

/** A validated client TLS object: plain, or a registered `clientTls` kind. */
export type ClientTlsConfig = z.output<typeof plainClientTls> | KindConfig;

const clientTlsKind = lazySchema(() => kindSlot('clientTls'));

/**
 * Client TLS: an object with `kind` is a registered `clientTls` kind (`io.prx.noValidation`,
 * `io.prx.boundPath`); one without is {@link plainClientTls}.
 */
export const clientTls: z.ZodType<ClientTlsConfig> = lazySchema(() => z.unknown().transform((value, ctx): ClientTlsConfig => {
  const hasKind = typeof value === 'object' && value !== null && 'kind' in value;
  return hasKind ? parseNested(ctx, clientTlsKind, value) : parseNested(ctx, plainClientTls, value);
}));
