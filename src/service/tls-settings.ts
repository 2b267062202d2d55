import { readFileSync } from 'node:fs';
import { PrxError } from '../core/errors.js';
import type { KindConfig, ServerTlsConfig } from '../config/index.js';
import { readPath } from '../naming/index.js';
import { PathMatcher } from '../naming/path-matcher.js';

/**
 * A client's TLS settings for one destination, resolved from its `tls` config (every protocol's
 * transport turns them into socket options).
 */
export interface ClientTlsSettings {
  readonly servername: string | undefined;
  readonly ca: Buffer | undefined;
  readonly rejectUnauthorized: boolean;
}

/** A client's `tls` config: plain (commonName, caCertPath, disableValidation) or a `clientTls` kind. */
export type ClientTlsConfig = KindConfig | { commonName?: string; caCertPath?: string; disableValidation: boolean };

/** Client TLS for one client: plain (commonName, CA, or no validation) or a `clientTls` kind. */
export function clientTls(cfg: ClientTlsConfig | undefined, vars: Readonly<Record<string, string>>, id: string): ClientTlsSettings | undefined {
  if (cfg === undefined) return undefined;
  if ('kind' in cfg) {
    const k = cfg as KindConfig & { commonName?: string; caCertPath?: string };
    if (k.kind === 'io.prx.noValidation') return { servername: undefined, ca: undefined, rejectUnauthorized: false };
    if (k.kind === 'io.prx.boundPath') return boundPathTls(cfg as KindConfig & BoundPathTlsConfig, id);
    return { servername: k.commonName, ca: readCa(k.caCertPath), rejectUnauthorized: true };
  }
  const plain = cfg;
  return {
    servername: plain.commonName === undefined ? undefined : PathMatcher.substitute(plain.commonName, vars),
    ca: readCa(plain.caCertPath),
    rejectUnauthorized: !plain.disableValidation,
  };
}

interface BoundPathTlsConfig {
  readonly caCertPath?: string;
  readonly names: readonly { readonly prefix: string; readonly commonNamePattern: string }[];
  readonly strict: boolean;
}

/**
 * `io.prx.boundPath`: the first `names` prefix matching the bound id gives the expected server
 * name. With none matching, Linkerd's `strict` (the default) refuses to build the client rather
 * than guess a name; `strict: false` talks plaintext to that id.
 */
function boundPathTls(cfg: BoundPathTlsConfig, id: string): ClientTlsSettings | undefined {
  const path = readPath(id);
  for (const n of cfg.names) {
    const m = PathMatcher.parse(n.prefix).match(path);
    if (m !== undefined) {
      return { servername: PathMatcher.substitute(n.commonNamePattern, m), ca: readCa(cfg.caCertPath), rejectUnauthorized: true };
    }
  }
  if (cfg.strict) throw new UnmatchedBoundPathError(id);
  return undefined;
}

/** A strict `io.prx.boundPath` client TLS has no `names` prefix matching the client's bound id. */
export class UnmatchedBoundPathError extends PrxError {
  readonly id: string;
  constructor(id: string) {
    super('PRX_ERR_CLIENT_TLS_NO_NAME', `io.prx.boundPath: no names prefix matches ${id} (strict)`);
    this.id = id;
  }
}

const caCache = new Map<string, Buffer>();

function readCa(path: string | undefined): Buffer | undefined {
  if (path === undefined) return undefined;
  let ca = caCache.get(path);
  if (ca === undefined) {
    ca = readFileSync(path);
    caCache.set(path, ca);
  }
  return ca;
}

/** A server's TLS socket options from its `tls` config; with `caCertPath`, clients must present a certificate it signed. */
export function serverTlsOptions(tls: ServerTlsConfig): { cert: Buffer; key: Buffer; ca?: Buffer; requestCert: boolean; rejectUnauthorized: boolean } {
  const cert = readFileSync(tls.certPath);
  const key = readFileSync(tls.keyPath);
  if (tls.caCertPath === undefined) return { cert, key, requestCert: false, rejectUnauthorized: false };
  return { cert, key, ca: readFileSync(tls.caCertPath), requestCert: true, rejectUnauthorized: true };
}
