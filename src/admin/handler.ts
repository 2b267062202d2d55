import type { IncomingHttpHeaders } from 'node:http';
import { BadRequestError } from './errors.js';
import type { AdminCategory } from './security.js';

/**
 * The admin handler contract: a handler gets a fully read, bounded request and returns a complete
 * response. Admin responses are small (the largest is a gzipped profile), so nothing streams.
 */

/** A request as a handler sees it. */
export interface AdminRequest {
  readonly method: string;
  /** The URL path, not decoded (routing and security see the same string). */
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: IncomingHttpHeaders;
  /** The request body, already read (bounded by the server's limit). */
  readonly body: Buffer;
  /** For a prefix endpoint (`/namer_state/*`), the part of the path after the prefix; else `''`. */
  readonly rest: string;
  /** True when the `Accept` header asks for `application/json`. */
  readonly wantsJson: boolean;
  /** Aborted when the client disconnects or the server closes, so long profiles stop early. */
  readonly signal: AbortSignal;
}

/** A complete response. */
export interface AdminResponse {
  /** Defaults to 200. */
  readonly status?: number;
  readonly contentType: string;
  readonly body: string | Uint8Array;
  readonly headers?: Readonly<Record<string, string>>;
  /** Runs after the response has been written, e.g. to shut down once the 200 went out. */
  readonly onSent?: () => void;
}

export type AdminHandler = (req: AdminRequest) => AdminResponse | Promise<AdminResponse>;

/** An endpoint registration. */
export interface AdminEndpoint {
  /**
   * An exact path (`/admin/ping`), or a prefix pattern ending in `/*`
   * (`/http/interpreter_state/io.prx.resolver/*`) that matches every path below it.
   */
  readonly path: string;
  readonly handler: AdminHandler;
  /** Overrides the category the path's regexes give; leave unset to follow Linkerd's table. */
  readonly category?: AdminCategory;
  /** One line for the `/admin` index. */
  readonly description?: string;
  /** Allowed methods (HEAD is implied by GET); other methods get 405. Unset: any method. */
  readonly method?: string | readonly string[];
}

const TEXT = 'text/plain; charset=utf-8';
const JSON_TYPE = 'application/json; charset=utf-8';

/** A plain-text response. */
export function textResponse(body: string, status = 200): AdminResponse {
  return { status, contentType: TEXT, body: body.endsWith('\n') || body === '' ? body : `${body}\n` };
}

/** A JSON response; `pretty` indents it. */
export function jsonResponse(value: unknown, status = 200, pretty = false): AdminResponse {
  return { status, contentType: JSON_TYPE, body: JSON.stringify(value, null, pretty ? 2 : undefined) };
}

/** Answers JSON when the client asked for it (`Accept: application/json`), text otherwise. */
export function negotiate(
  req: AdminRequest,
  render: { readonly text: () => string; readonly json: () => unknown },
): AdminResponse {
  return req.wantsJson ? jsonResponse(render.json()) : textResponse(render.text());
}

/** Whether an `Accept` header value lists `application/json`. */
export function acceptsJson(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  return accept.split(',').some((part) => part.split(';')[0]?.trim().toLowerCase() === 'application/json');
}

/**
 * The request's parameters: the query string plus, for a JSON object body, its string, number and
 * boolean fields. (Linkerd's handlers also read form-encoded bodies; prx refuses those on requests
 * that change state, since any web page's form can post them.) A malformed JSON body is a 400.
 */
export function requestParams(req: AdminRequest): URLSearchParams {
  const params = new URLSearchParams(req.query);
  const contentType = req.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
  if (req.body.length > 0 && contentType === 'application/json') {
    let fields: unknown;
    try {
      fields = JSON.parse(req.body.toString('utf8'));
    } catch {
      throw new BadRequestError('the body is not valid JSON');
    }
    if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) throw new BadRequestError('the JSON body must be an object');
    for (const [k, v] of Object.entries(fields)) {
      if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') params.append(k, String(v));
    }
  }
  return params;
}

/** Whether a query flag is set the way Linkerd's handlers read it (`?pretty=1`, `?pretty=true`). */
export function flag(params: URLSearchParams, name: string): boolean {
  const value = params.get(name);
  return value !== null && ['1', 'true', ''].includes(value.toLowerCase());
}
