import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import type * as Undici from 'undici';
import { errorMessage } from '../../core/errors.js';
import { OrchApiError, OrchInClusterError } from './errors.js';
import { JsonObjectSplitter } from './json-stream.js';
import type { OrchResource, WatchEvent } from './types.js';
import { StringDecoder } from 'node:string_decoder';

/** Where a kind's `host`/`port` keys point. No host: in-cluster when possible, else `kubectl proxy` on localhost. */
export interface OrchApiTarget {
  readonly host?: string | undefined;
  readonly port?: number | undefined;
}

/** Knobs outside the config, so tests can stand in for a pod's environment. */
export interface OrchApiEnvironment {
  readonly env?: NodeJS.ProcessEnv;
  /** Defaults to the standard mount point of a pod's service-account token and CA. */
  readonly serviceAccountDir?: string;
}

// undici loads tls, crypto and zlib: a proxy without an orchestrator kind never loads it.
let undiciModule: typeof Undici | undefined;
function undici(): typeof Undici {
  undiciModule ??= createRequire(import.meta.url)('undici') as typeof Undici;
  return undiciModule;
}

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** `kubectl proxy`'s port, Linkerd 1's default for every orchestrator kind. */
export const DEFAULT_ORCH_API_PORT = 8001;

export interface OrchGetResult<T> {
  readonly status: number;
  /** The parsed body; undefined when the answer was not a success. */
  readonly body: T | undefined;
  /** The body's text when the answer was not a success (a Status object, usually). */
  readonly errorText: string;
}

export interface OrchWatchStream {
  readonly status: number;
  /** The events as they arrive; ends when the server ends the stream. */
  readonly events: AsyncIterable<WatchEvent>;
  /** What is left of the body, as text (error answers). */
  text(): Promise<string>;
}

/**
 * A client of the orchestrator API. With `host` set it speaks plain HTTP to host:port, as Linkerd 1
 * did through a `kubectl proxy` sidecar. Without it, inside a pod (service-account token and CA at
 * their standard paths and `KUBERNETES_SERVICE_HOST`/`_PORT` set) it speaks HTTPS to the API
 * server with the pod's bearer token, so no sidecar is needed; elsewhere it falls back to
 * localhost. The token is read again for every request: projected tokens rotate.
 */
export class OrchApiClient {
  readonly origin: string;
  readonly inCluster: boolean;
  readonly #agent: Undici.Agent;
  readonly #tokenFile: string | undefined;

  private constructor(origin: string, agent: Undici.Agent, tokenFile: string | undefined) {
    this.origin = origin;
    this.#agent = agent;
    this.#tokenFile = tokenFile;
    this.inCluster = tokenFile !== undefined;
  }

  static create(target: OrchApiTarget, environment: OrchApiEnvironment = {}): OrchApiClient {
    const agentOpts = { headersTimeout: 30_000, bodyTimeout: 0 } as const;
    if (target.host !== undefined) {
      return new OrchApiClient(httpOrigin('http', target.host, target.port ?? DEFAULT_ORCH_API_PORT), new (undici().Agent)(agentOpts), undefined);
    }
    const env = environment.env ?? process.env;
    const dir = environment.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
    const tokenFile = join(dir, 'token');
    const caFile = join(dir, 'ca.crt');
    if (!existsSync(tokenFile)) {
      return new OrchApiClient(httpOrigin('http', 'localhost', target.port ?? DEFAULT_ORCH_API_PORT), new (undici().Agent)(agentOpts), undefined);
    }
    const host = env['KUBERNETES_SERVICE_HOST'];
    const port = Number(env['KUBERNETES_SERVICE_PORT'] ?? '443');
    if (host === undefined || host === '') {
      throw new OrchInClusterError(`a service-account token exists at ${tokenFile} but KUBERNETES_SERVICE_HOST is not set; set host to use kubectl proxy`);
    }
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      throw new OrchInClusterError(`KUBERNETES_SERVICE_PORT is not a port: ${JSON.stringify(env['KUBERNETES_SERVICE_PORT'])}`);
    }
    let ca: Buffer;
    try {
      ca = readFileSync(caFile);
    } catch (e) {
      throw new OrchInClusterError(`cannot read the API server's CA at ${caFile}: ${errorMessage(e)}`);
    }
    const agent = new (undici().Agent)({ ...agentOpts, connect: { ca, servername: isIp(host) ? undefined : host } });
    return new OrchApiClient(httpOrigin('https', host, port), agent, tokenFile);
  }

  /** GETs one object or list. Failures to get an answer at all become OrchApiError with status 0. */
  async get<T>(path: string, signal?: AbortSignal): Promise<OrchGetResult<T>> {
    let res;
    try {
      res = await undici().request(this.origin + path, { method: 'GET', dispatcher: this.#agent, headers: this.#headers(), ...(signal === undefined ? {} : { signal }) });
    } catch (e) {
      throw unreachable(path, e);
    }
    const text = await res.body.text();
    if (res.statusCode < 200 || res.statusCode >= 300) return { status: res.statusCode, body: undefined, errorText: text };
    try {
      return { status: res.statusCode, body: JSON.parse(text) as T, errorText: '' };
    } catch (e) {
      throw new OrchApiError(`orchestrator API GET ${path} answered unreadable JSON: ${errorMessage(e)}`, res.statusCode);
    }
  }

  /** Opens a watch stream; its events are parsed as they arrive, wherever the chunks split them. */
  async watch(path: string, signal: AbortSignal): Promise<OrchWatchStream> {
    let res;
    try {
      res = await undici().request(this.origin + path, { method: 'GET', dispatcher: this.#agent, headers: this.#headers(), signal });
    } catch (e) {
      throw unreachable(path, e);
    }
    const body = res.body;
    return {
      status: res.statusCode,
      events: parseEvents(body),
      text: () => body.text(),
    };
  }

  close(): Promise<void> {
    return this.#agent.destroy().catch(() => undefined);
  }

  #headers(): Record<string, string> {
    const h: Record<string, string> = { accept: 'application/json' };
    if (this.#tokenFile !== undefined) {
      let token: string;
      try {
        token = readFileSync(this.#tokenFile, 'utf8').trim();
      } catch (e) {
        throw new OrchApiError(`cannot read the service-account token at ${this.#tokenFile}: ${errorMessage(e)}`, 0);
      }
      h['authorization'] = `Bearer ${token}`;
    }
    return h;
  }
}

async function* parseEvents(body: AsyncIterable<Buffer>): AsyncGenerator<WatchEvent> {
  const splitter = new JsonObjectSplitter();
  const decoder = new StringDecoder('utf8');
  for await (const chunk of body) {
    for (const ev of splitter.push(decoder.write(chunk))) yield ev as WatchEvent;
  }
}

/** The path of a collection, in one namespace or (namespace undefined) across all of them. */
export function collectionPath(res: OrchResource, namespace?: string): string {
  const root = res.group === '' ? `/api/${res.version}` : `/apis/${res.group}/${res.version}`;
  return `${root}${namespace === undefined ? '' : `/namespaces/${encodeURIComponent(namespace)}`}/${res.plural}`;
}

/** The message of a Kubernetes Status body, or the start of whatever came instead. */
export function statusMessage(status: number, text: string): string {
  try {
    const s = JSON.parse(text) as { message?: unknown };
    if (typeof s.message === 'string') return s.message;
  } catch {
    // not a Status object
  }
  return text.trim().slice(0, 200) || `status ${status}`;
}

function unreachable(path: string, e: unknown): OrchApiError {
  if (e instanceof OrchApiError) return e;
  const code = (e as { code?: unknown } | undefined)?.code;
  return new OrchApiError(`orchestrator API GET ${path} failed: ${errorMessage(e)}${typeof code === 'string' ? ` (${code})` : ''}`, 0, { cause: e });
}

function httpOrigin(scheme: 'http' | 'https', host: string, port: number): string {
  return `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

function isIp(host: string): boolean {
  return /^[0-9.]+$/.test(host) || host.includes(':');
}
