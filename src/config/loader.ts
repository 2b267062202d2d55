import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Document, Node, Pair } from 'yaml';
import { errorMessage } from '../core/errors.js';
import { MAX_CONFIG_BYTES, documentBoundIssue, flowNestingIssue } from './bounds.js';
import { ConfigError, ConfigErrorCode, ConfigReadError, ConfigTooLargeError, type ConfigIssue, type ConfigPath } from './errors.js';
import { withYamlLibrary, type YamlLibrary } from './yaml-library.js';

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
 * Throws {@link ConfigReadError} when the source cannot be read, {@link ConfigTooLargeError}
 * when it holds more than {@link MAX_CONFIG_BYTES} (read no further than that).
 */
export async function readConfigSource(arg: string, opts: ReadConfigOptions = {}): Promise<ConfigSource> {
  const origin = arg === '-' ? STDIN_ORIGIN : arg;
  try {
    if (arg !== '-') {
      // A regular file's size is known up front; a device or pipe is read up to the limit.
      const info = await stat(arg);
      if (info.isDirectory()) throw Object.assign(new Error('is a directory'), { code: 'EISDIR' });
      if (info.isFile() && info.size > MAX_CONFIG_BYTES) throw new ConfigTooLargeError(origin, MAX_CONFIG_BYTES, info.size);
    }
    const text = await readAtMost(arg === '-' ? (opts.stdin ?? process.stdin) : createReadStream(arg), origin);
    return { text, origin };
  } catch (e) {
    if (e instanceof ConfigReadError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    const reason = (code !== undefined ? READ_REASONS[code] : undefined) ?? (e as Error).message;
    throw new ConfigReadError(origin, reason, { cause: e });
  }
}

async function readAtMost(stream: AsyncIterable<string | Uint8Array>, origin: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk);
    size += bytes.byteLength;
    if (size > MAX_CONFIG_BYTES) {
      (stream as { destroy?: () => void }).destroy?.();
      throw new ConfigTooLargeError(origin, MAX_CONFIG_BYTES);
    }
    chunks.push(bytes);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Parses config text, JSON or YAML (JSON is read as YAML 1.2, core schema: `yes` stays a
 * string), into plain data. Rejects syntax errors (with line and column), duplicate keys (naming
 * the key and its position), unresolved tags, recursive aliases, and a top level that is not an
 * object. Throws {@link ConfigError} with code `PRX_ERR_CONFIG_SYNTAX`, or
 * `PRX_ERR_CONFIG_TOO_LARGE` for a document past the bounds of `bounds.ts` (an alias bomb,
 * collections nested too deep, a huge string), named by key path and position.
 */
export function parseConfigText(text: string, origin?: string): unknown {
  return withYamlLibrary((yaml) => parseWith(yaml, text, origin));
}

function parseWith(yaml: YamlLibrary, text: string, origin: string | undefined): unknown {
  const lines = new yaml.LineCounter();
  const at = (offset: number): string => {
    const { line, col } = lines.linePos(offset);
    return `line ${line}, column ${col}`;
  };
  // Positions of the pre-scan come from the text itself (the line counter fills while parsing).
  const nesting = flowNestingIssue(text, (offset) => positionIn(text, offset));
  if (nesting !== undefined) throw new ConfigError([nesting], origin);
  let doc: Document;
  try {
    doc = yaml.parseDocument(text, { version: '1.2', schema: 'core', uniqueKeys: true, lineCounter: lines, prettyErrors: false });
  } catch (e) {
    throw new ConfigError([syntaxIssue([], `cannot parse: ${errorMessage(e)}`)], origin);
  }

  const issues: ConfigIssue[] = [];
  for (const problem of [...doc.errors, ...doc.warnings]) {
    const offset = problem.pos[0];
    if (problem.code === 'DUPLICATE_KEY') {
      issues.push(syntaxIssue(keyPathAt(yaml, doc, offset), `duplicate key at ${at(offset)}`));
    } else {
      issues.push(syntaxIssue([], `syntax error at ${at(offset)}: ${problem.message}`));
    }
  }
  if (issues.length > 0) throw new ConfigError(issues, origin);
  const bound = documentBoundIssue(yaml, doc, lines);
  if (bound !== undefined) throw new ConfigError([bound], origin);

  let data: unknown;
  try {
    // The bound above already counted what aliases expand to; the library's own alias limit
    // (a count of uses, not of size) would refuse sound configs that reuse an anchor often.
    data = doc.toJS({ maxAliasCount: -1 });
  } catch (e) {
    throw new ConfigError([syntaxIssue([], `cannot read the document: ${errorMessage(e)}`)], origin);
  }
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
  return validateConfigSource(await readConfigSource(arg, opts), validateRaw);
}

/** Parses and validates config text already read (errors name its origin). */
export function validateConfigSource<T>({ text, origin }: ConfigSource, validateRaw: (raw: unknown) => T): T {
  const raw = parseConfigText(text, origin);
  try {
    return validateRaw(raw);
  } catch (e) {
    throw e instanceof ConfigError ? e.withOrigin(origin) : e;
  }
}

/** `line L, column C` of `offset` in `text` (1-based, as the parser reports them). */
function positionIn(text: string, offset: number): string {
  let line = 1;
  let start = 0;
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    start = i + 1;
  }
  return `line ${line}, column ${offset - start + 1}`;
}

function syntaxIssue(path: ConfigPath, message: string): ConfigIssue {
  return { path, message, code: ConfigErrorCode.syntax };
}

/** The key path of the map key that starts at `offset` (where yaml reports a duplicate key). */
function keyPathAt(yaml: YamlLibrary, doc: Document, offset: number): ConfigPath {
  let found: ConfigPath = [];
  yaml.visit(doc, {
    Pair(_key, pair, ancestry) {
      if (!yaml.isScalar(pair.key) || pair.key.range?.[0] !== offset) return undefined;
      found = keyPath(yaml, [...ancestry, pair]);
      return yaml.visit.BREAK;
    },
  });
  return found;
}

function keyPath(yaml: YamlLibrary, chain: readonly (Document | Node | Pair)[]): ConfigPath {
  const path: (string | number)[] = [];
  chain.forEach((node, i) => {
    if (yaml.isPair(node)) path.push(yaml.isScalar(node.key) ? String(node.key.value) : String(node.key));
    else if (yaml.isSeq(node)) path.push(node.items.indexOf(chain[i + 1]));
    // A map adds nothing itself: the pair after it in the chain names the key.
  });
  return path;
}
