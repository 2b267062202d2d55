import { z } from 'zod';
import { ConfigError, type ConfigErrorCode, type ConfigIssue } from './errors.js';
import { releaseSchemas } from './lazy-schema.js';

// Configs are parsed once at start-up: zod's compiled fast paths (generated source, compiled
// code, kept with each schema for the life of the process) buy nothing there and cost heap.
z.config({ jitless: true });

// Zod validates; this module turns its issues into operator language. Messages are produced by a
// per-parse error map (it sees the schema that raised the issue, e.g. a strict object's known
// keys); the final issues are then mapped to ConfigIssues with their path and offending value.

type RawIssue = z.core.$ZodRawIssue;
type RefinementCtx = z.core.$RefinementCtx;

/**
 * Extra data a custom issue can carry (in zod's `params`): the specific error code, and whether the
 * offending value should be printed after the message.
 */
export interface IssueParams {
  readonly code?: ConfigErrorCode;
  readonly showValue?: boolean;
}

const INT_FORMATS: ReadonlySet<string> = new Set(['safeint', 'int32', 'uint32']);

function isIntegerSchema(inst: RawIssue['inst']): boolean {
  return inst instanceof z.core.$ZodNumberFormat && INT_FORMATS.has(inst._zod.def.format);
}

const TYPE_NAMES: Readonly<Record<string, string>> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'true or false',
  object: 'an object',
  record: 'an object',
  array: 'a list',
  tuple: 'a list',
  null: 'null',
};

const quote = (v: unknown): string => JSON.stringify(v) ?? String(v);

function describeSize(origin: string, bound: number | bigint, atLeast: boolean, inclusive: boolean): string {
  const n = Number(bound);
  switch (origin) {
    case 'array':
    case 'set':
      if (atLeast && n === 1) return 'must not be empty';
      return `must have ${atLeast ? 'at least' : 'at most'} ${n} entr${n === 1 ? 'y' : 'ies'}`;
    case 'string':
      if (atLeast && n === 1) return 'must not be empty';
      return `must be ${atLeast ? 'at least' : 'at most'} ${n} character${n === 1 ? '' : 's'} long`;
    default:
      if (inclusive) return `must be ${atLeast ? 'at least' : 'at most'} ${n}`;
      return `must be ${atLeast ? 'greater' : 'less'} than ${n}`;
  }
}

/** The zod error map used for every config parse: one operator-readable reason per issue. */
export function describeIssue(issue: RawIssue): string {
  switch (issue.code) {
    case 'invalid_type': {
      if (issue.input === undefined || issue.expected === 'nonoptional') return 'required key is missing';
      const expected = isIntegerSchema(issue.inst) ? 'int' : issue.expected;
      return `expected ${TYPE_NAMES[expected] ?? expected}`;
    }
    case 'too_small':
      return describeSize(issue.origin, issue.minimum, true, issue.inclusive ?? true);
    case 'too_big':
      return describeSize(issue.origin, issue.maximum, false, issue.inclusive ?? true);
    case 'invalid_value':
      return issue.values.length === 1
        ? `expected ${quote(issue.values[0])}`
        : `expected one of ${issue.values.map(quote).join(', ')}`;
    case 'unrecognized_keys': {
      const known = issue.inst instanceof z.core.$ZodObject ? Object.keys(issue.inst._zod.def.shape) : [];
      return known.length === 0 ? 'unknown key (no keys are allowed here)' : `unknown key (known keys: ${known.join(', ')})`;
    }
    case 'invalid_format':
      return issue.format === 'regex' && 'pattern' in issue
        ? `must match ${String(issue.pattern)}`
        : `expected a valid ${issue.format}`;
    case 'not_multiple_of':
      return `must be a multiple of ${Number(issue.divisor)}`;
    case 'invalid_union':
      return 'does not match any allowed form';
    case 'invalid_key':
      return 'invalid key';
    case 'invalid_element':
      return 'invalid entry';
    case 'custom':
      return 'invalid value';
  }
}

/** Parse options for every config parse: operator messages, and inputs kept for `got …`. */
export const parseParams: z.core.ParseContext<z.core.$ZodIssue> = { error: describeIssue, reportInput: true };

const SCALAR_ORIGINS: ReadonlySet<string> = new Set(['number', 'int', 'bigint', 'string', 'date']);

function showsValue(issue: z.core.$ZodIssue): boolean {
  switch (issue.code) {
    case 'invalid_type':
      return issue.input !== undefined;
    case 'too_small':
    case 'too_big':
      return SCALAR_ORIGINS.has(issue.origin);
    case 'invalid_value':
    case 'invalid_format':
    case 'not_multiple_of':
      return true;
    case 'custom':
      return (issue.params as IssueParams | undefined)?.showValue === true;
    case 'unrecognized_keys':
    case 'invalid_union':
    case 'invalid_key':
    case 'invalid_element':
      return false;
  }
}

/** Converts final zod issues (parsed with {@link parseParams}) to config issues. */
export function toConfigIssues(issues: readonly z.core.$ZodIssue[]): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  for (const issue of issues) {
    const path = issue.path.map((k) => (typeof k === 'number' ? k : String(k)));
    if (issue.code === 'unrecognized_keys') {
      // zod reports the object; operators want the offending key itself.
      for (const key of issue.keys) out.push({ path: [...path, key], message: issue.message });
      continue;
    }
    const code = issue.code === 'custom' ? (issue.params as IssueParams | undefined)?.code : undefined;
    out.push({
      path,
      message: issue.message,
      ...(showsValue(issue) ? { value: issue.input } : {}),
      ...(code === undefined ? {} : { code }),
    });
  }
  return out;
}

/**
 * `value` without the object keys whose value is null: an explicit null means "not set", as it
 * did for Linkerd's optional fields (`addForwardedHeader: null`, an empty `tls:` in YAML).
 */
export function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) if (child !== null) out[key] = withoutNulls(child);
  return out;
}

// Nesting depth of validate(): a kind's validation may validate a referenced config of its own.
let validating = 0;

/**
 * Validates `raw` against `schema` and returns the parsed value, or throws a {@link ConfigError}
 * listing every issue. Use this (not `schema.parse`) so messages are the operator-facing ones.
 * Null-valued keys count as absent (see {@link withoutNulls}). The schemas it builds are dropped
 * when the outermost call returns.
 */
export function validate<S extends z.ZodType>(schema: S, raw: unknown): z.output<S> {
  validating++;
  try {
    const result = schema.safeParse(withoutNulls(raw), parseParams);
    if (!result.success) throw new ConfigError(toConfigIssues(result.error.issues));
    return result.data;
  } finally {
    // A config is read; its schemas are garbage until the next one (config/lazy-schema.ts).
    if (--validating === 0) releaseSchemas();
  }
}

/**
 * {@link validate} for config objects checked again at run time (a client's balancer and failure
 * accrual): each object, frozen like every validated config, is validated once. Why: the schemas
 * are built afresh for every validation (lazy-schema.ts), and many clients share one object.
 */
export function validateOnce<S extends z.ZodType>(schema: S): (raw: object) => z.output<S> {
  const validated = new WeakMap<object, z.output<S>>();
  return (raw) => {
    let valid = validated.get(raw);
    if (valid === undefined) {
      valid = validate(schema, raw);
      validated.set(raw, valid);
    }
    return valid;
  };
}

/**
 * Parses `value` with `schema` from inside a transform, forwarding any issues to `ctx` (their
 * paths stay relative, so the enclosing objects prefix them). Returns the output or `z.NEVER`.
 */
export function parseNested<S extends z.ZodType>(ctx: RefinementCtx, schema: S, value: unknown): z.output<S> {
  const result = schema.safeParse(value, parseParams);
  if (result.success) return result.data;
  // Final issues already carry their message, which zod keeps, only prefixing the path. A raw
  // issue must have an `input` key, even when the final one dropped it.
  for (const issue of result.error.issues) ctx.issues.push({ ...issue, input: issue.input } as RawIssue);
  return z.NEVER;
}

/** Reports the value being parsed as a missing required key; returns `z.NEVER` for transforms. */
export function missingKey(ctx: RefinementCtx): never {
  ctx.addIssue({ code: 'invalid_type', expected: 'nonoptional', input: undefined });
  return z.NEVER;
}

/** Adds a custom issue at `path` (relative to the value being checked). */
export function addIssue(
  ctx: RefinementCtx,
  path: readonly (string | number)[],
  message: string,
  opts: { value?: unknown; code?: ConfigErrorCode } = {},
): void {
  const params: IssueParams = {
    ...('value' in opts ? { showValue: true } : {}),
    ...(opts.code === undefined ? {} : { code: opts.code }),
  };
  ctx.addIssue({ code: 'custom', path: [...path], message, input: opts.value, params });
}
