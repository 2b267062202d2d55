import { closeSync, openSync, readSync } from 'node:fs';
import { z } from 'zod';
import { addIssue, filePath, intInRange, interfaceShape, lazySchema } from '../../config/index.js';
import { errorMessage } from '../../core/errors.js';
import { parseRollPolicy } from '../../protocol/http/access-log.js';
import { InterfaceNotListeningError } from '../errors.js';
import { type InterfaceContext, type ResolverInterface, defineInterface } from './interface-kind.js';
import type { MeshServer, MeshServerOptions } from './mesh-server.js';

const rollPolicy = lazySchema(() => z.string().superRefine((text, ctx) => {
  try {
    parseRollPolicy(text);
  } catch (e) {
    addIssue(ctx, [], errorMessage(e), { value: text });
  }
}));

/** The PEM label of a PKCS#8 key (plain or encrypted); PKCS#1 (`RSA PRIVATE KEY`) and SEC1 (`EC PRIVATE KEY`) are not. */
const PKCS8_LABEL = /-----BEGIN (ENCRYPTED )?PRIVATE KEY-----/;
const OTHER_KEY_LABEL = /-----BEGIN ([A-Z0-9 ]+)-----/;

/** Why `file` is not a PKCS#8 PEM key, or undefined when it is (only its first 4 KiB are read). */
export function pkcs8Problem(file: string): string | undefined {
  let head: string;
  try {
    const fd = openSync(file, 'r');
    try {
      const buf = Buffer.alloc(4096);
      head = buf.toString('latin1', 0, readSync(fd, buf, 0, buf.length, 0));
    } finally {
      closeSync(fd);
    }
  } catch (e) {
    return `cannot read the key file: ${errorMessage(e)}`;
  }
  if (PKCS8_LABEL.test(head)) return undefined;
  const label = OTHER_KEY_LABEL.exec(head)?.[1];
  return label === undefined
    ? 'the key file is not a PEM key; the mesh interface needs a PKCS#8 key (-----BEGIN PRIVATE KEY-----)'
    : `the key is ${label}, not PKCS#8; convert it with: openssl pkcs8 -topk8 -nocrypt -in <key> -out <key.pk8>`;
}

/**
 * `io.prx.mesh`: the mesh API over gRPC (default 127.0.0.1:4321) — Interpreter, Resolver and
 * Delegator services of package `io.linkerd.mesh` — used by the proxy's `io.prx.mesh`
 * interpreter and by Linkerd's `io.l5d.mesh`. `h2AccessLog*` write one line per call; with `tls`
 * the key must be PKCS#8 (checked when the config is read).
 */
export const meshInterfaceSchema = lazySchema(() => z
  .strictObject({
    ...interfaceShape('io.prx.mesh', 4321),
    h2AccessLog: filePath.optional(),
    h2AccessLogRollPolicy: rollPolicy.default('Never'),
    h2AccessLogAppend: z.boolean().default(true),
    h2AccessLogRotateCount: intInRange(-1, 2147483647).default(-1),
  })
  .superRefine((cfg, ctx) => {
    if (cfg.tls === undefined) return;
    const problem = pkcs8Problem(cfg.tls.keyPath);
    if (problem !== undefined) addIssue(ctx, ['tls', 'keyPath'], problem, { value: cfg.tls.keyPath });
  }));
export type MeshInterfaceConfig = z.output<typeof meshInterfaceSchema>;

/**
 * The interface as the resolver process holds it. Its gRPC server and protobufjs are loaded by `listen()`
 * (a dynamic import of ./mesh-server.js), so a resolver without a mesh interface never loads them.
 */
export class MeshInterface implements ResolverInterface {
  readonly kind = 'io.prx.mesh';
  readonly #cfg: MeshInterfaceConfig;
  readonly #ctx: InterfaceContext;
  readonly #options: MeshServerOptions;
  #server: MeshServer | undefined;

  constructor(cfg: MeshInterfaceConfig, ctx: InterfaceContext, options: MeshServerOptions = {}) {
    this.#cfg = cfg;
    this.#ctx = ctx;
    this.#options = options;
  }

  async listen(): Promise<{ ip: string; port: number }> {
    if (this.#server) throw new Error('interface io.prx.mesh is already listening');
    const { MeshServer } = await import('./mesh-server.js');
    const server = new MeshServer(this.#cfg, this.#ctx, this.#options);
    const address = await server.listen();
    this.#server = server;
    return address;
  }

  /** The running server (tests read its counts). */
  get server(): MeshServer {
    if (!this.#server) throw new InterfaceNotListeningError(this.kind);
    return this.#server;
  }

  get address(): { ip: string; port: number } {
    return this.server.address;
  }

  get url(): string {
    return this.server.url;
  }

  async close(graceMs = 0): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    await server?.close(graceMs);
  }
}

/** The `io.prx.mesh` interface kind. */
export const meshInterfaceKind = defineInterface<MeshInterfaceConfig>({
  kind: 'io.prx.mesh',
  schema: meshInterfaceSchema,
  create: (cfg, ctx) => new MeshInterface(cfg, ctx),
});
