/**
 * The JSON endpoints behind the resolver's UI: list the stored dtabs with their versions, check a
 * dtab as it is typed (parse errors with their position), and save with compare-and-set.
 *
 * The admin layer cannot import the resolver (they are siblings), so the process hands in a
 * {@link StoredDtabs} adapter over its store. A save names the version the editor started from;
 * when storage holds another version the save is refused with the stored dtab, so the page can
 * show both and the operator decides: nothing is overwritten unseen and nothing typed is lost.
 */
import { errorMessage } from '../../core/errors.js';
import { NamingParseError, readDtab, type Dtab } from '../../naming/index.js';
import { BadRequestError } from '../errors.js';
import { jsonResponse, type AdminEndpoint, type AdminRequest, type AdminResponse } from '../handler.js';

/** A stored dtab as the UI sees it; `version` is the opaque version in base64 (the controller's ETag). */
export interface StoredDtabView {
  readonly namespace: string;
  readonly dtab: string;
  readonly version: string;
}

/** What a save came to. */
export type SaveOutcome =
  | { readonly kind: 'saved'; readonly current: StoredDtabView | undefined }
  /** The stored version is not the one the editor started from (or, creating, the namespace exists). */
  | { readonly kind: 'conflict'; readonly current: StoredDtabView | undefined }
  | { readonly kind: 'absent' }
  | { readonly kind: 'refused'; readonly status: number; readonly message: string };

/** The resolver's store, as the UI needs it. */
export interface StoredDtabs {
  list(): Promise<readonly StoredDtabView[]>;
  get(namespace: string): Promise<StoredDtabView | undefined>;
  /** `version` undefined: create (conflict if it exists); else compare-and-set against it. */
  save(namespace: string, dtab: Dtab, version: string | undefined): Promise<SaveOutcome>;
  health(): { readonly ok: boolean; readonly detail?: string };
}

/** A dtab check's answer: ok with the dentry count, or the parse error and where it is. */
export type DtabCheck =
  | { readonly ok: true; readonly dentries: number; readonly show: string }
  | { readonly ok: false; readonly error: string; readonly offset: number | null; readonly line: number | null; readonly column: number | null };

/** Parses `text` as the resolver would store it. */
export function checkDtab(text: string): DtabCheck {
  try {
    const dtab = readDtab(text, { located: true });
    return { ok: true, dentries: dtab.size, show: dtab.show };
  } catch (e) {
    const offset = e instanceof NamingParseError && e.offset !== undefined ? e.offset : null;
    let line: number | null = null;
    let column: number | null = null;
    if (offset !== null) {
      const before = text.slice(0, offset);
      line = before.split('\n').length;
      column = offset - (before.lastIndexOf('\n') + 1) + 1;
    }
    return { ok: false, error: errorMessage(e), offset, line, column };
  }
}

function jsonBody(req: AdminRequest): Record<string, unknown> {
  const type = String(req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') throw new BadRequestError('expected a JSON body (Content-Type: application/json)');
  let body: unknown;
  try {
    body = JSON.parse(req.body.toString('utf8'));
  } catch {
    throw new BadRequestError('the body is not valid JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new BadRequestError('the JSON body must be an object');
  return body as Record<string, unknown>;
}

function stringField(body: Record<string, unknown>, name: string, required: boolean): string | undefined {
  const v = body[name];
  if (v === undefined || v === null) {
    if (required) throw new BadRequestError(`\`${name}\` is required`);
    return undefined;
  }
  if (typeof v !== 'string') throw new BadRequestError(`\`${name}\` must be a string`);
  return v;
}

/**
 * `/dtab/namespaces.json` (GET, ui), `/dtab/check.json` (POST `{dtab}`, ui: it changes nothing)
 * and `/dtab/save.json` (POST `{namespace, dtab, version?}`, control).
 */
export function dtabEditorEndpoints(store: StoredDtabs): AdminEndpoint[] {
  return [
    {
      path: '/dtab/namespaces.json',
      method: 'GET',
      category: 'ui',
      description: 'The stored namespaces with their dtabs and versions, and the storage health.',
      handler: async () => jsonResponse({ namespaces: await store.list(), health: store.health() }),
    },
    {
      path: '/dtab/check.json',
      method: 'POST',
      category: 'ui',
      description: 'Parses a dtab (JSON body {"dtab"}); answers ok, or the error with its offset, line and column.',
      handler: (req) => jsonResponse(checkDtab(stringField(jsonBody(req), 'dtab', true) ?? '')),
    },
    {
      path: '/dtab/save.json',
      method: 'POST',
      category: 'control',
      description: 'Saves a dtab (JSON body {"namespace","dtab","version"}); without a version it creates. 409 with the stored dtab on a conflict.',
      handler: (req) => save(store, req),
    },
  ];
}

async function save(store: StoredDtabs, req: AdminRequest): Promise<AdminResponse> {
  const body = jsonBody(req);
  const namespace = stringField(body, 'namespace', true) ?? '';
  const text = stringField(body, 'dtab', true) ?? '';
  const version = stringField(body, 'version', false);
  if (namespace === '') throw new BadRequestError('`namespace` must not be empty');
  const check = checkDtab(text);
  if (!check.ok) return jsonResponse({ error: `Invalid dtab: ${check.error}`, check }, 400);
  const outcome = await store.save(namespace, readDtab(text, { located: true }), version);
  switch (outcome.kind) {
    case 'saved':
      return jsonResponse({ saved: true, current: outcome.current ?? null });
    case 'conflict':
      return jsonResponse(
        {
          error: version === undefined
            ? `namespace ${namespace} already exists`
            : `namespace ${namespace} was changed by someone else since you loaded it (your version ${version}); nothing was saved`,
          current: outcome.current ?? null,
        },
        409,
      );
    case 'absent':
      return jsonResponse({ error: `namespace ${namespace} does not exist (deleted since you loaded it?); nothing was saved`, current: null }, 404);
    case 'refused':
      return jsonResponse({ error: outcome.message }, outcome.status);
  }
}
