import { PrxError } from '../core/errors.js';

/** Stable codes of configuration errors. `INVALID` is the general one; the others narrow it. */
export const ConfigErrorCode = {
  invalid: 'PRX_ERR_CONFIG_INVALID',
  read: 'PRX_ERR_CONFIG_READ',
  syntax: 'PRX_ERR_CONFIG_SYNTAX',
  tooLarge: 'PRX_ERR_CONFIG_TOO_LARGE',
  unknownKind: 'PRX_ERR_CONFIG_UNKNOWN_KIND',
  experimental: 'PRX_ERR_CONFIG_EXPERIMENTAL',
  conflictingLabels: 'PRX_ERR_CONFIG_CONFLICTING_LABELS',
  conflictingPorts: 'PRX_ERR_CONFIG_CONFLICTING_PORTS',
  conflictingPrefixes: 'PRX_ERR_CONFIG_CONFLICTING_PREFIXES',
} as const;

/** One of the {@link ConfigErrorCode} values. */
export type ConfigErrorCode = (typeof ConfigErrorCode)[keyof typeof ConfigErrorCode];

/** A key path into a config document: object keys and list indexes, outermost first. */
export type ConfigPath = readonly (string | number)[];

/**
 * One problem found in a config document. `message` is the reason in operator terms; `value`, when
 * present, is the offending value and is shown after it as `got …`.
 */
export interface ConfigIssue {
  readonly path: ConfigPath;
  readonly message: string;
  readonly value?: unknown;
  /** A more specific code than `PRX_ERR_CONFIG_INVALID`, when the issue has one. */
  readonly code?: ConfigErrorCode;
}

/**
 * An invalid configuration: one or more issues, each rendered as one line
 * (`routers[0].servers[1].port: expected an integer, got "abc"`). The code is the issues' common
 * specific code when they all share one, else `PRX_ERR_CONFIG_INVALID`.
 */
export class ConfigError extends PrxError {
  readonly issues: readonly ConfigIssue[];
  /** Where the config came from (a file path or `<stdin>`), when known. */
  readonly origin: string | undefined;

  constructor(issues: readonly ConfigIssue[], origin?: string, options?: ErrorOptions) {
    const lines = issues.map(formatIssue);
    const heading = origin === undefined ? 'invalid configuration' : `invalid configuration in ${origin}`;
    super(commonCode(issues), [`${heading}:`, ...lines.map((l) => `  ${l}`)].join('\n'), options);
    this.issues = issues;
    this.origin = origin;
  }

  /** The issues, one formatted line each, in the order found. */
  get lines(): string[] {
    return this.issues.map(formatIssue);
  }

  /** The same issues attributed to `origin` (the loader knows the file; validation does not). */
  withOrigin(origin: string): ConfigError {
    return new ConfigError(this.issues, origin, { cause: this.cause });
  }
}

/** The config source could not be read (missing file, permissions, stdin failure). */
export class ConfigReadError extends PrxError {
  constructor(origin: string, reason: string, options?: ErrorOptions, code: ConfigErrorCode = ConfigErrorCode.read) {
    super(code, `cannot read configuration from ${origin}: ${reason}`, options);
  }
}

/** The config source is larger than prx reads (a config is kilobytes; this is a mistake or an attack). */
export class ConfigTooLargeError extends ConfigReadError {
  constructor(origin: string, limit: number, size?: number) {
    const what = size === undefined ? '' : `${size} bytes, `;
    super(origin, `${what}larger than the limit of ${limit} bytes`, undefined, ConfigErrorCode.tooLarge);
  }
}

function commonCode(issues: readonly ConfigIssue[]): ConfigErrorCode {
  const first = issues[0]?.code;
  if (first === undefined) return ConfigErrorCode.invalid;
  return issues.every((i) => i.code === first) ? first : ConfigErrorCode.invalid;
}

/** One issue as one line: `<path>: <message>[, got <value>]`; an empty path prints no prefix. */
export function formatIssue(issue: ConfigIssue): string {
  const got = 'value' in issue ? `, got ${showValue(issue.value)}` : '';
  const where = issue.path.length === 0 ? '' : `${showPath(issue.path)}: `;
  return `${where}${issue.message}${got}`;
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** A key path in JavaScript notation: `routers[0].servers[1].port`, `a["odd key"]`. */
export function showPath(path: ConfigPath): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else if (IDENTIFIER.test(key)) out += out === '' ? key : `.${key}`;
    else out += `[${JSON.stringify(key)}]`;
  }
  return out;
}

const MAX_VALUE_CHARS = 60;

/** A value as JSON, truncated with `…` past 60 characters (configs can hold whole objects). */
export function showValue(value: unknown): string {
  let text: string;
  if (typeof value === 'number' && !Number.isFinite(value)) text = String(value);
  else if (value === undefined) text = 'nothing';
  // A long string is cut before it is quoted: it may be megabytes.
  else if (typeof value === 'string' && value.length > MAX_VALUE_CHARS) text = JSON.stringify(value.slice(0, MAX_VALUE_CHARS));
  else text = JSON.stringify(value) ?? `a ${typeof value}`; // functions and symbols have no JSON
  return text.length > MAX_VALUE_CHARS ? `${text.slice(0, MAX_VALUE_CHARS - 1)}…` : text;
}
