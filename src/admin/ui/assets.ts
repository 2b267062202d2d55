/**
 * The admin UI's static files: the browser bundles that `scripts/bundle.mjs` writes to `dist/ui/`
 * (every file name carries its content hash), served from memory under `/files/`.
 *
 * Caching: a hashed file never changes, so it is served `immutable` for a year; the HTML pages
 * that name them are `no-cache`, so a new build is picked up on the next load. Files are read
 * (and gzipped once) on the first UI request, not at start-up: a proxy nobody looks at pays
 * nothing for its UI.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AdminHttpError, NotFoundError } from '../errors.js';
import type { AdminEndpoint, AdminRequest, AdminResponse } from '../handler.js';

/** The manifest the bundle step writes: per page entry, its script and style sheets. */
export interface UiManifest {
  readonly pages: Readonly<Record<string, { readonly js: string; readonly css: readonly string[] }>>;
}

/** The directory of the built UI, relative to the repository (or installed package) root. */
export const UI_DIST_DIR = join('dist', 'ui');
export const UI_MANIFEST = 'manifest.json';

/** The UI has not been built (`npm run build` writes it): pages answer 503 saying so. */
export class UiNotBuiltError extends AdminHttpError {
  constructor(dir: string) {
    super('PRX_ERR_ADMIN_UI_NOT_BUILT', 503, `the admin UI is not built (no ${join(dir, UI_MANIFEST)}); run: npm run build`);
  }
}

interface UiFile {
  readonly type: string;
  readonly raw: Buffer;
  readonly gzipped: Buffer;
  readonly etag: string;
}

const TYPES: Readonly<Record<string, string>> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

/** Headers every admin UI response carries. */
export const UI_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/**
 * The pages' content-security policy: scripts, styles and fetches from the admin itself only;
 * no inline script, no frames, nothing from another origin.
 */
export const UI_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Finds `dist/ui` by walking up from this module (works from `src/` under tsx and from the bundle). */
export function findUiDir(from: string = dirname(fileURLToPath(import.meta.url))): string {
  let fallback: string | undefined;
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, UI_DIST_DIR);
    if (existsSync(join(candidate, UI_MANIFEST))) return candidate;
    if (fallback === undefined && existsSync(join(dir, 'package.json'))) fallback = candidate;
    if (dirname(dir) === dir) return fallback ?? candidate;
  }
}

/** The built UI, loaded lazily. */
export class UiAssets {
  readonly dir: string;
  #loaded: { readonly manifest: UiManifest; readonly files: ReadonlyMap<string, UiFile> } | undefined;

  constructor(dir: string = findUiDir()) {
    this.dir = dir;
  }

  /** The manifest; throws {@link UiNotBuiltError} when the UI has not been built. */
  get manifest(): UiManifest {
    return this.#load().manifest;
  }

  file(name: string): UiFile | undefined {
    return this.#load().files.get(name);
  }

  #load(): { readonly manifest: UiManifest; readonly files: ReadonlyMap<string, UiFile> } {
    if (this.#loaded) return this.#loaded;
    const manifestPath = join(this.dir, UI_MANIFEST);
    if (!existsSync(manifestPath)) throw new UiNotBuiltError(this.dir);
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as UiManifest;
    const files = new Map<string, UiFile>();
    for (const name of readdirSync(this.dir)) {
      const type = TYPES[extname(name)];
      if (type === undefined) continue;
      const raw = readFileSync(join(this.dir, name));
      const etag = `"${process.getBuiltinModule('node:crypto').createHash('sha256').update(raw).digest('base64url').slice(0, 22)}"`;
      files.set(name, { type, raw, gzipped: gzip(raw), etag });
    }
    this.#loaded = { manifest, files };
    return this.#loaded;
  }
}

/** Gzips (level 9); node:zlib is loaded on the first UI request, not at start-up. */
export function gzip(raw: Uint8Array): Buffer {
  return process.getBuiltinModule('node:zlib').gzipSync(raw, { level: 9 });
}

/** Whether the request's `Accept-Encoding` lists gzip (with a non-zero q). */
export function acceptsGzip(req: AdminRequest): boolean {
  const header = req.headers['accept-encoding'];
  if (typeof header !== 'string') return false;
  return header.split(',').some((part) => {
    const [coding, ...params] = part.trim().split(';');
    if (coding?.trim().toLowerCase() !== 'gzip') return false;
    return !params.some((p) => /^\s*q=0(\.0*)?\s*$/.test(p));
  });
}

/** A body, gzipped when the client takes gzip. */
export function encoded(req: AdminRequest, raw: Uint8Array, gzipped: Uint8Array | (() => Uint8Array)): { body: Uint8Array; headers: Record<string, string> } {
  if (!acceptsGzip(req)) return { body: raw, headers: { vary: 'accept-encoding' } };
  return { body: typeof gzipped === 'function' ? gzipped() : gzipped, headers: { vary: 'accept-encoding', 'content-encoding': 'gzip' } };
}

/** `/files/*`: the hashed UI files. */
export function filesEndpoint(assets: UiAssets): AdminEndpoint {
  return {
    path: '/files/*',
    method: 'GET',
    category: 'ui',
    description: 'Static files of the admin UI (scripts, style sheets).',
    handler: (req): AdminResponse => {
      const file = req.rest.includes('/') ? undefined : assets.file(req.rest);
      if (!file) throw new NotFoundError(`no UI file ${req.rest}`);
      const common = { ...UI_SECURITY_HEADERS, etag: file.etag, 'cache-control': 'public, max-age=31536000, immutable' };
      if (req.headers['if-none-match'] === file.etag) return { status: 304, contentType: file.type, body: '', headers: common };
      const { body, headers } = encoded(req, file.raw, file.gzipped);
      return { contentType: file.type, body, headers: { ...common, ...headers } };
    },
  };
}
