import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as Tls from 'node:tls';
import { z } from 'zod';
import { filePath, nonEmptyString } from './schema.js';
import { addIssue } from './issues.js';
import { lazySchema } from './lazy-schema.js';

/**
 * The namer TLS object of the key-value stores (the `io.prx.kvstore` and `io.prx.kvstore2` dtab
 * storage, the `io.prx.kvstore` namer): the server
 * certificate must be valid for `commonName` (unless `disableValidation`, which skips the
 * host-name check only), be signed by `trustCertsBundle`/`trustCerts` (else the system roots), and
 * `clientAuth` presents a client certificate (PKCS#8 key).
 */
export const namerTlsSchema = lazySchema(() => z
  .strictObject({
    disableValidation: z.boolean().default(false),
    commonName: nonEmptyString.optional(),
    /** Deprecated: CA certificate files, one per entry. */
    trustCerts: z.array(filePath).default([]),
    trustCertsBundle: filePath.optional(),
    clientAuth: z.strictObject({ certPath: filePath, keyPath: filePath }).optional(),
  })
  .superRefine((tls, ctx) => {
    if (!tls.disableValidation && tls.commonName === undefined) {
      addIssue(ctx, ['commonName'], 'required unless disableValidation is true');
    }
    if (tls.disableValidation && tls.clientAuth !== undefined) {
      addIssue(ctx, ['clientAuth'], 'cannot be combined with disableValidation');
    }
  }));

export type NamerTlsConfig = z.output<typeof namerTlsSchema>;

/** The files of a TLS config, read once when the store is created. */
export interface TlsMaterial {
  /** Trusted CAs (PEM, concatenated); undefined = the system roots. */
  readonly ca: Buffer | undefined;
  readonly cert: Buffer | undefined;
  readonly key: Buffer | undefined;
  readonly commonName: string | undefined;
  readonly disableValidation: boolean;
}

export function loadTlsMaterial(cfg: NamerTlsConfig): TlsMaterial {
  const caFiles = [...cfg.trustCerts, ...(cfg.trustCertsBundle === undefined ? [] : [cfg.trustCertsBundle])];
  return {
    ca: caFiles.length === 0 ? undefined : Buffer.concat(caFiles.map((f) => readFileSync(f))),
    cert: cfg.clientAuth === undefined ? undefined : readFileSync(cfg.clientAuth.certPath),
    key: cfg.clientAuth === undefined ? undefined : readFileSync(cfg.clientAuth.keyPath),
    commonName: cfg.commonName,
    disableValidation: cfg.disableValidation,
  };
}

// node:tls (and node:crypto with it) is loaded when a TLS connection is configured, not by every
// process that loads the config layer: a proxy serving plain HTTP never pays for it.
let tlsModule: typeof Tls | undefined;
function nodeTls(): typeof Tls {
  tlsModule ??= createRequire(import.meta.url)('node:tls') as typeof Tls;
  return tlsModule;
}

/** Node `tls.connect` options for {@link TlsMaterial} (the HTTP-based stores and namers). */
export function nodeTlsOptions(m: TlsMaterial): Tls.ConnectionOptions {
  const { checkServerIdentity } = nodeTls();
  const cn = m.commonName;
  return {
    ...(m.ca === undefined ? {} : { ca: m.ca }),
    ...(m.cert === undefined ? {} : { cert: m.cert }),
    ...(m.key === undefined ? {} : { key: m.key }),
    ...(cn === undefined ? {} : { servername: cn }),
    // The certificate chain is always verified; only the name check is replaced: against the
    // configured common name instead of the host dialled, or skipped with disableValidation.
    checkServerIdentity: (host, cert) => {
      if (m.disableValidation) return undefined;
      return checkServerIdentity(cn ?? host, cert);
    },
  };
}
