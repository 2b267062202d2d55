import { readFile } from 'node:fs/promises';
import { errorMessage } from '../core/errors.js';
import { prxVersion } from '../core/version.js';

const USAGE = `usage: prxctl [--base-url <url>] <command>

Commands (against the prx-resolver HTTP controller, io.prx.httpController):
  dtab list                                   list the dtab namespaces
  dtab get <ns> [--json]                      show a dtab and its version
  dtab create <ns> <file|->                   create a namespace from a dtab file (or stdin)
  dtab update <ns> <file|-> [--if-match <v>]  replace a dtab; with --if-match only if still at version v
  dtab delete <ns> [--if-match <v>]           delete a namespace; with --if-match only if still at version v
  delegate <ns> <path> [--dtab <dtab>]        explain how a path delegates (extra dentries appended)

Options:
  --base-url <url>  the controller's address (default: $PRXCTL_BASE_URL, else ${'http://127.0.0.1:4180'})
  -h, --help        show this help
  -v, --version     print the version

Dtab files are dtab text (\`/svc => /#/io.prx.fs ;\`, \`#\` comments) or a JSON array of
{"prefix","dst"} objects. \`dtab get\` prints a file \`dtab update\` reads back.
Exit status: 0 success, 1 the request failed, 2 usage error.
`;

export const DEFAULT_BASE_URL = 'http://127.0.0.1:4180';
const REQUEST_TIMEOUT_MS = 30_000;

/** A wrong command line: the usage goes to stderr and the exit status is 2. */
class PrxctlUsageError extends Error {}

/** A request that failed: the message goes to stderr and the exit status is 1. */
class CommandError extends Error {}

/** What a command writes and reads; tests may pass their own. */
export interface PrxctlIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly stdin: AsyncIterable<string | Uint8Array>;
  readonly env: Readonly<Record<string, string | undefined>>;
}

const processIo: PrxctlIo = {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  stdin: process.stdin,
  env: process.env,
};

interface ParsedArgs {
  readonly positional: string[];
  readonly options: Map<string, string | true>;
}

const VALUE_OPTIONS = new Set(['--base-url', '--if-match', '--dtab']);
const FLAG_OPTIONS = new Set(['--json', '--help', '-h', '--version', '-v']);

function parseArgs(args: readonly string[]): ParsedArgs {
  const positional: string[] = [];
  const options = new Map<string, string | true>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if (VALUE_OPTIONS.has(name)) {
      const value = eq > 0 ? arg.slice(eq + 1) : args[++i];
      if (value === undefined) throw new PrxctlUsageError(`${name} needs a value`);
      options.set(name, value);
    } else if (FLAG_OPTIONS.has(name)) {
      options.set(name, true);
    } else if (arg.startsWith('-') && arg !== '-') {
      throw new PrxctlUsageError(`unknown option ${arg}`);
    } else {
      positional.push(arg);
    }
  }
  return { positional, options };
}

/** Entry point of `bin/prxctl`; resolves once the command is done and `process.exitCode` is set. */
export async function main(args: string[], io: PrxctlIo = processIo): Promise<void> {
  process.exitCode = await run(args, io);
}

/** Runs one command; returns the exit status. */
export async function run(args: readonly string[], io: PrxctlIo): Promise<number> {
  try {
    const parsed = parseArgs(args);
    if (parsed.options.has('--help') || parsed.options.has('-h')) {
      io.stdout(USAGE);
      return 0;
    }
    if (parsed.options.has('--version') || parsed.options.has('-v')) {
      io.stdout(`prxctl ${prxVersion()}\n`);
      return 0;
    }
    const base = baseUrl(parsed, io.env);
    await dispatch(new Controller(base), parsed, io);
    return 0;
  } catch (e) {
    if (e instanceof PrxctlUsageError) {
      io.stderr(`prxctl: ${e.message}\n${USAGE}`);
      return 2;
    }
    io.stderr(`prxctl: ${errorMessage(e)}\n`);
    return 1;
  }
}

function baseUrl(parsed: ParsedArgs, env: PrxctlIo['env']): string {
  const option = parsed.options.get('--base-url');
  const raw = typeof option === 'string' ? option : env['PRXCTL_BASE_URL'] || DEFAULT_BASE_URL;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new PrxctlUsageError(`invalid base URL ${JSON.stringify(raw)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new PrxctlUsageError(`base URL must be http or https, got ${raw}`);
  return url.href.replace(/\/+$/, '');
}

function expectArgs(positional: readonly string[], count: number, usage: string): void {
  if (positional.length !== count) throw new PrxctlUsageError(`usage: prxctl ${usage}`);
}

function optionString(parsed: ParsedArgs, name: string): string | undefined {
  const v = parsed.options.get(name);
  return typeof v === 'string' ? v : undefined;
}

async function dispatch(ctl: Controller, parsed: ParsedArgs, io: PrxctlIo): Promise<void> {
  const [group, action, ...rest] = parsed.positional;
  const allowed = (names: readonly string[]): void => {
    for (const name of parsed.options.keys()) {
      if (name !== '--base-url' && !names.includes(name)) throw new PrxctlUsageError(`${name} does not apply to this command`);
    }
  };
  if (group === 'delegate') {
    allowed(['--dtab']);
    const [ns, path, ...extra] = [action, ...rest];
    if (ns === undefined || path === undefined || extra.length > 0) throw new PrxctlUsageError('usage: prxctl delegate <ns> <path> [--dtab <dtab>]');
    const tree = await ctl.delegate(ns, path, optionString(parsed, '--dtab'));
    io.stdout(renderDelegateTree(tree));
    return;
  }
  if (group !== 'dtab') throw new PrxctlUsageError(group === undefined ? 'no command given' : `unknown command ${group}`);
  switch (action ?? '') {
    case 'list':
      allowed([]);
      expectArgs(rest, 0, 'dtab list');
      for (const ns of await ctl.list()) io.stdout(`${ns}\n`);
      return;
    case 'get': {
      allowed(['--json']);
      expectArgs(rest, 1, 'dtab get <ns> [--json]');
      const ns = rest[0] as string;
      const { body, version } = await ctl.get(ns);
      io.stdout(parsed.options.has('--json') ? body : formatDtab(JSON.parse(body) as JsonDentry[], version));
      return;
    }
    case 'create': {
      allowed([]);
      expectArgs(rest, 2, 'dtab create <ns> <file|->');
      const [ns, file] = rest as [string, string];
      await ctl.create(ns, await readDtabSource(file, io));
      io.stdout(`created dtab namespace ${ns}\n`);
      return;
    }
    case 'update': {
      allowed(['--if-match']);
      expectArgs(rest, 2, 'dtab update <ns> <file|-> [--if-match <version>]');
      const [ns, file] = rest as [string, string];
      await ctl.update(ns, await readDtabSource(file, io), optionString(parsed, '--if-match'));
      io.stdout(`updated dtab namespace ${ns}\n`);
      return;
    }
    case 'delete': {
      allowed(['--if-match']);
      expectArgs(rest, 1, 'dtab delete <ns> [--if-match <version>]');
      await ctl.delete(rest[0] as string, optionString(parsed, '--if-match'));
      io.stdout(`deleted dtab namespace ${rest[0] as string}\n`);
      return;
    }
    default:
      throw new PrxctlUsageError(action === undefined ? 'dtab: no subcommand given' : `unknown dtab subcommand ${action}`);
  }
}

async function readDtabSource(file: string, io: PrxctlIo): Promise<string> {
  if (file === '-') {
    const chunks: Buffer[] = [];
    for await (const chunk of io.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk));
    return Buffer.concat(chunks).toString('utf8');
  }
  try {
    return await readFile(file, 'utf8');
  } catch (e) {
    throw new CommandError(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : errorMessage(e)}`);
  }
}

interface JsonDentry {
  readonly prefix: string;
  readonly dst: string;
}

/** A dtab as `dtab get` prints it: its version as a comment, then one aligned dentry per line. */
export function formatDtab(dentries: readonly JsonDentry[], version: string | undefined): string {
  const width = Math.max(0, ...dentries.map((d) => d.prefix.length));
  const lines = version === undefined ? [] : [`# version ${version}`];
  for (const d of dentries) lines.push(`${d.prefix.padEnd(width)} => ${d.dst} ;`);
  return `${lines.join('\n')}\n`;
}

/** The HTTP controller's API as prxctl uses it. */
class Controller {
  readonly #base: string;

  constructor(base: string) {
    this.#base = base;
  }

  async list(): Promise<string[]> {
    const res = await this.#request('GET', '/api/1/dtabs');
    return JSON.parse(await this.#expect(res, 200)) as string[];
  }

  async get(ns: string): Promise<{ body: string; version: string | undefined }> {
    const res = await this.#request('GET', dtabPath(ns), { headers: { accept: 'application/json' } });
    if (res.status === 404) throw new CommandError(`dtab namespace ${ns} not found`);
    return { body: await this.#expect(res, 200), version: res.headers.get('etag') ?? undefined };
  }

  async create(ns: string, dtab: string): Promise<void> {
    const res = await this.#request('POST', dtabPath(ns), dtabBody(dtab));
    if (res.status === 409) throw new CommandError(`dtab namespace ${ns} already exists`);
    await this.#expectWrite(res);
  }

  async update(ns: string, dtab: string, ifMatch: string | undefined): Promise<void> {
    const body = dtabBody(dtab);
    const res = await this.#request('PUT', dtabPath(ns), {
      ...body,
      headers: { ...body.headers, ...(ifMatch === undefined ? {} : { 'if-match': ifMatch }) },
    });
    if (res.status === 404) throw new CommandError(`dtab namespace ${ns} not found`);
    if (res.status === 412) {
      throw new CommandError(`version mismatch: dtab namespace ${ns} is no longer at version ${ifMatch ?? ''}; get it again and retry`);
    }
    await this.#expectWrite(res);
  }

  async delete(ns: string, ifMatch?: string): Promise<void> {
    const res = await this.#request('DELETE', dtabPath(ns), ifMatch === undefined ? {} : { headers: { 'if-match': ifMatch } });
    if (res.status === 404) throw new CommandError(`dtab namespace ${ns} not found`);
    if (res.status === 412) {
      throw new CommandError(`version mismatch: dtab namespace ${ns} is no longer at version ${ifMatch ?? ''}; get it again and retry`);
    }
    await this.#expectWrite(res);
  }

  async delegate(ns: string, path: string, dtab: string | undefined): Promise<unknown> {
    // The controller explains a namespace it does not store through the empty dtab (as namerd
    // does): a `neg` that reads like a routing result. A typo'd namespace is an error here.
    const exists = await this.#request('HEAD', dtabPath(ns));
    if (exists.status === 404) throw new CommandError(`dtab namespace ${ns} not found`);
    const query = new URLSearchParams({ path, ...(dtab === undefined ? {} : { dtab }) });
    const res = await this.#request('GET', `/api/1/delegate/${encodeURIComponent(ns)}?${query.toString()}`);
    if (res.status === 400) throw new CommandError(`invalid request: ${(await res.text()).trim()}`);
    return JSON.parse(await this.#expect(res, 200)) as unknown;
  }

  async #request(method: string, path: string, init: { headers?: Record<string, string>; body?: string } = {}): Promise<Response> {
    const url = `${this.#base}${path}`;
    try {
      return await fetch(url, { method, ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    } catch (e) {
      const cause = (e as { cause?: unknown }).cause;
      throw new CommandError(`cannot reach the resolver at ${this.#base}: ${errorMessage(cause ?? e)}`);
    }
  }

  async #expectWrite(res: Response): Promise<void> {
    if (res.status === 400) {
      const reason = (await res.text()).trim();
      throw new CommandError(reason.startsWith('Invalid If-Match') ? `invalid --if-match: ${reason}` : `invalid dtab: ${reason}`);
    }
    await this.#expect(res, 204);
  }

  /** The body of a response with the expected status; any other status is an error. */
  async #expect(res: Response, status: number): Promise<string> {
    const body = await res.text();
    if (res.status === status) return body;
    const detail = body.trim() === '' ? '' : `: ${body.trim()}`;
    throw new CommandError(`unexpected response ${res.status} ${res.statusText} from ${res.url}${detail}`);
  }
}

function dtabPath(ns: string): string {
  return `/api/1/dtabs/${encodeURIComponent(ns)}`;
}

/** A dtab file is sent as JSON when it is a JSON array, as dtab text otherwise. */
function dtabBody(text: string): { headers: Record<string, string>; body: string } {
  const json = text.trimStart().startsWith('[');
  return { headers: { 'content-type': json ? 'application/json' : 'application/dtab' }, body: text };
}

// ---------------------------------------------------------------------------------------------
// Delegation trees, as readable indented text.

interface DelegateNode {
  readonly type: string;
  readonly path?: string;
  readonly dentry?: { readonly prefix: string; readonly dst: string };
  readonly delegate?: DelegateNode;
  readonly alt?: readonly DelegateNode[];
  readonly union?: readonly { readonly weight: number; readonly tree: DelegateNode }[];
  readonly bound?: { readonly addr?: AddrNode; readonly id: string; readonly path: string };
  readonly tree?: DelegateNode;
  readonly message?: string;
  readonly name?: string;
}

interface AddrNode {
  readonly type: string;
  readonly addrs?: readonly { readonly ip: string; readonly port: number }[];
  readonly cause?: string;
}

function addrText(addr: AddrNode | undefined): string {
  if (addr === undefined) return 'address unknown';
  switch (addr.type) {
    case 'bound': {
      const addrs = addr.addrs ?? [];
      if (addrs.length === 0) return 'no endpoints';
      return addrs.map((a) => (a.ip.includes(':') ? `[${a.ip}]:${a.port}` : `${a.ip}:${a.port}`)).join(', ');
    }
    case 'failed':
      return `failed: ${addr.cause ?? ''}`;
    default:
      return addr.type;
  }
}

/**
 * A delegation tree as indented lines: each step's path with the dentry that produced it in
 * brackets, the kind of node where it matters (`alt:`, `union:`, `neg`, `fail`, `error: …`), and
 * under each bound leaf its concrete name, residual path and addresses.
 */
export function renderDelegateTree(tree: unknown): string {
  const lines: string[] = [];
  const walk = (node: DelegateNode, depth: number, lead = ''): void => {
    const indent = '  '.repeat(depth);
    const dentry = node.dentry ? `  [${node.dentry.prefix} => ${node.dentry.dst}]` : '';
    const head = `${indent}${lead}${node.path ?? ''}${dentry}`;
    const bound = (b: NonNullable<DelegateNode['bound']>): void => {
      lines.push(`${indent}  bound ${b.id} (residual ${b.path}): ${addrText(b.addr)}`);
    };
    switch (node.type) {
      case 'delegate':
        lines.push(head);
        if (node.delegate) walk(node.delegate, depth + 1);
        return;
      case 'alt':
        lines.push(`${head}  alt:`);
        for (const child of node.alt ?? []) walk(child, depth + 1);
        return;
      case 'union':
        lines.push(`${head}  union:`);
        for (const w of node.union ?? []) walk(w.tree, depth + 1, `${w.weight} * `);
        return;
      case 'leaf':
        lines.push(head);
        if (node.bound) bound(node.bound);
        return;
      case 'exception':
        lines.push(`${head}  error: ${node.message ?? ''}`);
        return;
      case 'transformation':
        lines.push(`${head}  transformed by ${node.name ?? '?'}`);
        if (node.bound) bound(node.bound);
        if (node.tree) walk(node.tree, depth + 1);
        return;
      default:
        lines.push(`${head}  ${node.type}`);
    }
  };
  walk(tree as DelegateNode, 0);
  return `${lines.join('\n')}\n`;
}
