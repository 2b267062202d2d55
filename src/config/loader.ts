import { readFile } from 'node:fs/promises';
import { isPair, isScalar, isSeq, LineCounter, parseDocument, visit, type Document, type Node, type Pair } from 'yaml';
import { ConfigError, ConfigErrorCode, ConfigReadError, type ConfigIssue, type ConfigPath } from './errors.js';

/** The text of a config file and where it came from (a path, or `<stdin>`). */
export interface ConfigSource {
  readonly text: string;
  readonly origin: string;
}

/** Where `-` reads from; tests pass a stream instead of the process's stdin. */
export interface ReadConfigOptions {
  readonly stdin?: AsyncIterable<string | Uint8Array>;
}

/** The origin reported for a config read from standard input. */
export const STDIN_ORIGIN = '<stdin>';

const READ_REASONS: Readonly<Record<string, string>> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EISDIR: 'is a directory',
};

/**
 * Reads the config named on the command line: a file path, or `-` for all of standard input.
 * Throws {@link ConfigReadError} when the source cannot be read.
 */
export async function readConfigSource(arg: string, opts: ReadConfigOptions = {}): Promise<ConfigSource> {
  const origin = arg === '-' ? STDIN_ORIGIN : arg;
  try {
    const text = arg === '-' ? await readAll(opts.stdin ?? process.stdin) : await readFile(arg, 'utf8');
    return { text, origin };
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const reason = (code !== undefined ? READ_REASONS[code] : undefined) ?? (e as Error).message;
    throw new ConfigReadError(origin, reason, { cause: e });
  }
}

async function readAll(stream: AsyncIterable<string | Uint8Array>): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Parses config text, JSON or YAML (JSON is read as YAML 1.2, core schema: `yes` stays a
 * string), into plain data. Rejects syntax errors (with line and column), duplicate keys (naming
 * the key and its position), unresolved tags, recursive aliases, and a top level that is not an
 * object. Throws {@link ConfigError} with code `PRX_ERR_CONFIG_SYNTAX`.
 */
export function parseConfigText(text: string, origin?: string): unknown {
  const lines = new LineCounter();
  const doc = parseDocument(text, { version: '1.2', schema: 'core', uniqueKeys: true, lineCounter: lines, prettyErrors: false });
  const at = (offset: number): string => {
    const { line, col } = lines.linePos(offset);
    return `line ${line}, column ${col}`;
  };

  const issues: ConfigIssue[] = [];
  for (const problem of [...doc.errors, ...doc.warnings]) {
    const offset = problem.pos[0];
    if (problem.code === 'DUPLICATE_KEY') {
      issues.push(syntaxIssue(keyPathAt(doc, offset), `duplicate key at ${at(offset)}`));
    } else {
      issues.push(syntaxIssue([], `syntax error at ${at(offset)}: ${problem.message}`));
    }
  }
  // An alias inside the node it names would make the data cyclic.
  visit(doc, {
    Alias(_key, alias, ancestry) {
      const target = alias.resolve(doc);
      if (target !== undefined && ancestry.includes(target)) {
        issues.push(syntaxIssue([], `recursive alias *${alias.source} at ${at(alias.range?.[0] ?? 0)}`));
      }
    },
  });
  if (issues.length > 0) throw new ConfigError(issues, origin);

  const data: unknown = doc.toJS({ maxAliasCount: 1000 });
  if (data === null || data === undefined) {
    throw new ConfigError([syntaxIssue([], 'the configuration is empty')], origin);
  }
  if (typeof data !== 'object' || Array.isArray(data)) {
    const got = Array.isArray(data) ? 'a list' : `a ${typeof data}`;
    throw new ConfigError([syntaxIssue([], `the configuration must be an object of top-level keys, got ${got}`)], origin);
  }
  return data;
}

/**
 * Reads and parses the config named on the command line, then validates it with `validateRaw`
 * (e.g. `validateProxyConfig`). Validation errors are attributed to the source.
 */
export async function loadConfigWith<T>(arg: string, validateRaw: (raw: unknown) => T, opts: ReadConfigOptions = {}): Promise<T> {
  const { text, origin } = await readConfigSource(arg, opts);
  const raw = parseConfigText(text, origin);
  try {
    return validateRaw(raw);
  } catch (e) {
    throw e instanceof ConfigError ? e.withOrigin(origin) : e;
  }
}

function syntaxIssue(path: ConfigPath, message: string): ConfigIssue {
  return { path, message, code: ConfigErrorCode.syntax };
}

/** The key path of the map key that starts at `offset` (where yaml reports a duplicate key). */
function keyPathAt(doc: Document, offset: number): ConfigPath {
  let found: ConfigPath = [];
  visit(doc, {
    Pair(_key, pair, ancestry) {
      if (!isScalar(pair.key) || pair.key.range?.[0] !== offset) return undefined;
      found = keyPath([...ancestry, pair]);
      return visit.BREAK;
    },
  });
  return found;
}

function keyPath(chain: readonly (Document | Node | Pair)[]): ConfigPath {
  const path: (string | number)[] = [];
  chain.forEach((node, i) => {
    if (isPair(node)) path.push(isScalar(node.key) ? String(node.key.value) : String(node.key));
    else if (isSeq(node)) path.push(node.items.indexOf(chain[i + 1]));
    // A map adds nothing itself: the pair after it in the chain names the key.
  });
  return path;
}
