import { isIP } from 'node:net';
import { z } from 'zod';
import { errorMessage } from '../core/errors.js';
import { readDtab, readPath } from '../naming/index.js';
import { ConfigErrorCode } from './errors.js';
import { addIssue, missingKey, parseNested } from './issues.js';
import { kindsOf, lookupKind, type Family } from './registry.js';
import { lazySchema } from './lazy-schema.js';

// Scalar schemas shared by every config module. Each carries its own operator message; the
// messages leave a missing key to the shared error map ("required key is missing").

/** A schema-level message for every issue except a missing key. */
function unlessMissing(message: string): (issue: z.core.$ZodRawIssue) => string | undefined {
  return (issue) => (issue.input === undefined ? undefined : message);
}

/** An integer in `[min, max]`; every failure reads `expected an integer from <min> to <max>`. */
export function intInRange(min: number, max: number): z.ZodInt {
  const error = unlessMissing(`expected an integer from ${min} to ${max}`);
  return z.int({ error }).min(min, { error }).max(max, { error });
}

/** A number in `[min, max]`; every failure reads `expected a number from <min> to <max>`. */
export function numberInRange(min: number, max: number): z.ZodNumber {
  const error = unlessMissing(`expected a number from ${min} to ${max}`);
  return z.number({ error }).min(min, { error }).max(max, { error });
}

/** A TCP port, 1–65535. */
export const port = lazySchema(() => intInRange(1, 65535));

/** An integer ≥ `min`; every failure reads `expected <what>`. */
function intAtLeast(min: number, what: string): z.ZodInt {
  const error = unlessMissing(`expected ${what}`);
  return z.int({ error }).min(min, { error });
}

/** A count or size: an integer ≥ 0. */
export const nonNegativeInt = lazySchema(() => intAtLeast(0, 'a non-negative integer'));

/** An integer ≥ 1. */
export const positiveInt = lazySchema(() => intAtLeast(1, 'a positive integer'));

/** A duration in milliseconds (keys ending in `Ms`): an integer ≥ 0. */
export const durationMs = lazySchema(() => intAtLeast(0, 'a duration in milliseconds (an integer ≥ 0)'));

/** A duration in seconds (keys ending in `Secs`/`Seconds`): an integer ≥ 0. */
export const durationSecs = lazySchema(() => intAtLeast(0, 'a duration in seconds (an integer ≥ 0)'));

/** A size in kilobytes (keys ending in `KB`): an integer ≥ 0. */
export const kilobytes = lazySchema(() => intAtLeast(0, 'a size in kilobytes (an integer ≥ 0)'));

/** A fraction, 0–1 inclusive (sample rates, `percentCanRetry`). */
export const fraction = lazySchema(() => numberInRange(0, 1));

/** A string with at least one character. */
export const nonEmptyString = lazySchema(() => z.string().min(1));

/** The longest name that becomes part of metric names and admin paths (a router label, a prefix). */
export const MAX_NAME_CHARS = 128;

const METRIC_NAME = /^[A-Za-z0-9_.-]+$/;

/**
 * A name that becomes part of metric names and admin pages (a router label, a stats prefix):
 * 1–128 characters from `A–Z a–z 0–9 _ . -`, so that every exporter (JSON keys, Prometheus labels,
 * statsd names split on `:` and `|`) carries it unchanged.
 */
export const metricName = lazySchema(() => z.string().superRefine((text, ctx) => {
  if (text.length === 0 || text.length > MAX_NAME_CHARS || !METRIC_NAME.test(text)) {
    addIssue(ctx, [], `must be 1 to ${MAX_NAME_CHARS} characters from A-Z, a-z, 0-9, "_", "." and "-" (it names metrics and admin pages)`, {
      value: text,
    });
  }
}));

/** A short identifier shown in admin paths (a resolver namespace): 1–128 characters. */
export const shortName = lazySchema(() => z.string().min(1).max(MAX_NAME_CHARS));

/** A file-system path (certificates, dtab files): a non-empty string, not checked for existence. */
export const filePath = nonEmptyString;

const HOST_LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

/** True for an IPv4/IPv6 literal or an RFC 1123 host name. */
export function isIpOrHostname(text: string): boolean {
  if (isIP(text) !== 0) return true;
  return text.length <= 253 && text.split('.').every((label) => HOST_LABEL.test(label));
}

/** A listen or connect address: an IPv4/IPv6 literal or a host name. */
export const ip = lazySchema(() => z.string().refine(isIpOrHostname, {
  error: unlessMissing('expected an IP address or host name'),
  params: { showValue: true },
}));

/**
 * A path in the naming grammar (`/svc/users`), normalized to its canonical form. The error is the
 * parser's, which marks the offending character: `'/' expected but 'i' found at '[i]nvalid'`.
 */
export const pathText = lazySchema(() => z.string().transform((text, ctx) => {
  try {
    return readPath(text).show;
  } catch (e) {
    addIssue(ctx, [], `invalid path: ${errorMessage(e)}`);
    return z.NEVER;
  }
}));

/** A delegation table in text form, normalized to its canonical form (`/a=>/b;/c=>/d`). */
// Its size is bounded like any config string (config/bounds.ts) and like every dtab (naming/limits.ts).
export const dtabText = lazySchema(() => z.string().transform((text, ctx) => {
  try {
    // A config dtab is often a YAML block of many lines: errors name the line and column.
    return readDtab(text, { located: true }).show;
  } catch (e) {
    addIssue(ctx, [], `invalid dtab: ${errorMessage(e)}`);
    return z.NEVER;
  }
}));

// A prefix-pattern segment: `*`, or literal text mixed with `{name}` capture variables.
const PATTERN_SEGMENT = /^(?:\*|(?:[^\s{}/*]+|\{[A-Za-z_][\w.-]*\})+)$/;

/**
 * A path prefix pattern of static client/service configs: `/#/io.prx.fs/*` or `/svc/{service}`.
 * Segments are `*` (any one segment) or text with `{name}` captures that parameters may reference.
 */
export const pathPattern = lazySchema(() => z.string().superRefine((text, ctx) => {
  if (!text.startsWith('/')) {
    addIssue(ctx, [], 'invalid prefix pattern: must start with "/"', { value: text });
    return;
  }
  if (text === '/') return;
  const segments = text.slice(1).split('/');
  const bad = segments.findIndex((s) => !PATTERN_SEGMENT.test(s));
  if (bad >= 0) {
    addIssue(
      ctx,
      [],
      `invalid prefix pattern: segment ${bad + 1} (${JSON.stringify(segments[bad])}) must be "*" or text with {name} captures`,
      { value: text },
    );
  }
}));

/** A regular expression (JavaScript syntax); it must compile. */
export const regexText = lazySchema(() => z.string().superRefine((text, ctx) => {
  try {
    new RegExp(text);
  } catch (e) {
    // "Invalid regular expression: /(/: Unterminated group" → keep just the reason.
    const reason = errorMessage(e).replace(/^Invalid regular expression: \/.*\/[a-z]*: /s, '');
    addIssue(ctx, [], `invalid regular expression: ${reason}`, { value: text });
  }
}));

/** An absolute http(s) URL. */
export const httpUrl = lazySchema(() => z.string().superRefine((text, ctx) => {
  const scheme = URL.canParse(text) ? new URL(text).protocol : undefined;
  if (scheme !== 'http:' && scheme !== 'https:') {
    addIssue(ctx, [], 'expected an http or https URL', { value: text });
  }
}));

const DATA_UNITS: Readonly<Record<string, number>> = {
  byte: 1,
  kilobyte: 1024,
  megabyte: 1024 ** 2,
  gigabyte: 1024 ** 3,
  terabyte: 1024 ** 4,
  petabyte: 1024 ** 5,
};
const DATA_SIZE = /^(\d+)\.(byte|kilobyte|megabyte|gigabyte|terabyte|petabyte)s?$/;

/** Bytes in a data-size text (`3.megabytes`, `1.gigabyte`; binary units), or undefined. */
export function parseDataSize(text: string): number | undefined {
  const m = DATA_SIZE.exec(text.trim());
  if (!m) return undefined;
  const bytes = Number(m[1]) * (DATA_UNITS[m[2] as string] as number);
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}

const DATA_SIZE_MESSAGE = 'expected a data size such as 512.kilobytes, 3.megabytes or 1.gigabyte, or a number of bytes';

/**
 * A data size, to bytes: `<n>.<unit>` with unit byte, kilobyte, megabyte, gigabyte, terabyte or
 * petabyte (singular or plural; 1 kilobyte = 1024 bytes), or a plain integer number of bytes (the
 * form the effective config prints, so it re-validates).
 */
export const dataSize = lazySchema(() => z.unknown().transform((value, ctx) => {
  if (value === undefined) return missingKey(ctx);
  let bytes: number | undefined;
  if (typeof value === 'number') bytes = Number.isSafeInteger(value) && value >= 0 ? value : undefined;
  else if (typeof value === 'string') bytes = parseDataSize(value);
  if (bytes === undefined) {
    addIssue(ctx, [], DATA_SIZE_MESSAGE, { value });
    return z.NEVER;
  }
  return bytes;
}));

/**
 * A list that may also be written as a single element (`identifier: {kind: …}` or a list of
 * them). The output is always a list; a single element's errors keep the element's own path.
 */
export function oneOrMany<S extends z.ZodType>(element: S): z.ZodType<z.output<S>[]> {
  const list = z.array(element);
  return z.unknown().transform((value, ctx): z.output<S>[] => {
    if (value === undefined) return missingKey(ctx);
    return Array.isArray(value) ? parseNested(ctx, list, value) : [parseNested(ctx, element, value)];
  });
}

// ---------------------------------------------------------------------------------------------
// Polymorphic slots: objects whose `kind` (or a router's `protocol`) selects their schema.

/** A validated kind object: the output of its kind's schema, `kind` included. */
export type KindConfig = { readonly kind: string } & { readonly [key: string]: unknown };

/** A validated router object: its protocol's schema output, with `label` defaulted to the protocol. */
export type ProtocolConfig = { readonly protocol: string; readonly label: string } & { readonly [key: string]: unknown };

/** Options of {@link kindSlot}. */
export interface KindSlotOptions {
  /** Used when the slot is absent, and validated like a configured object (`{kind: 'default'}`). */
  readonly default?: { readonly kind: string } & { readonly [key: string]: unknown };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function knownKinds(family: Family, discriminator: string): string {
  const kinds = kindsOf(family);
  if (discriminator === 'protocol') {
    return kinds.length === 0 ? 'no protocols are registered' : `known protocols: ${kinds.join(', ')}`;
  }
  return kinds.length === 0 ? `no ${family} kinds are registered` : `known kinds: ${kinds.join(', ')}`;
}

/**
 * Validates `value` with the schema registered for its discriminator in `family`: the common core
 * of {@link kindSlot} and {@link protocolSlot}. Reports the issue and returns undefined on failure.
 */
function resolveKind(
  ctx: z.core.$RefinementCtx,
  family: Family,
  discriminator: 'kind' | 'protocol',
  value: unknown,
): Record<string, unknown> | undefined {
  if (value === undefined) return missingKey(ctx);
  if (!isPlainObject(value)) {
    ctx.addIssue({ code: 'invalid_type', expected: 'object', input: value });
    return undefined;
  }
  const kind = value[discriminator];
  if (kind === undefined) {
    addIssue(ctx, [discriminator], `required key is missing (${knownKinds(family, discriminator)})`);
    return undefined;
  }
  if (typeof kind !== 'string') {
    ctx.addIssue({ code: 'invalid_type', expected: 'string', input: kind, path: [discriminator] });
    return undefined;
  }
  const def = lookupKind(family, kind);
  if (def === undefined) {
    const noun = discriminator === 'protocol' ? 'protocol' : `${family} kind`;
    addIssue(ctx, [discriminator], `unknown ${noun} ${JSON.stringify(kind)} (${knownKinds(family, discriminator)})`, {
      code: ConfigErrorCode.unknownKind,
    });
    return undefined;
  }
  if (def.experimental === true && value['experimental'] !== true) {
    const noun = discriminator === 'protocol' ? 'protocol' : 'kind';
    addIssue(ctx, [], `${noun} ${JSON.stringify(kind)} is experimental and must be enabled explicitly with experimental: true`, {
      code: ConfigErrorCode.experimental,
    });
  }
  const out = parseNested(ctx, def.schema, value);
  return ctx.issues.length === 0 && isPlainObject(out) ? out : undefined;
}

/**
 * A polymorphic config object of `family`: its `kind` selects the registered kind (see
 * `registry.ts`), whose schema validates the whole object (errors keep their full key path, e.g.
 * `namers[0].rootDir`). An unknown kind lists the known ones; an experimental kind is refused
 * unless the object sets `experimental: true`. Kinds are looked up at parse time, so plugins may
 * register after this schema is built.
 */
export function kindSlot(family: Family, opts: KindSlotOptions = {}): z.ZodType<KindConfig> {
  const slot = z.unknown().transform((value, ctx) => (resolveKind(ctx, family, 'kind', value) as KindConfig | undefined) ?? z.NEVER);
  return opts.default === undefined ? slot : slot.prefault(opts.default);
}

/**
 * A router object: its `protocol` selects the registered kind of family `protocol`, exactly like
 * {@link kindSlot}. The output leads with `protocol` and `label` (which defaults to the protocol).
 */
export function protocolSlot(): z.ZodType<ProtocolConfig> {
  return z.unknown().transform((value, ctx) => {
    const out = resolveKind(ctx, 'protocol', 'protocol', value);
    if (out === undefined) return z.NEVER;
    const { protocol, label, ...rest } = out as { protocol: string; label?: unknown };
    return { protocol, label: typeof label === 'string' ? label : protocol, ...rest };
  });
}

/**
 * Keys every kind object accepts; a plugin's schema spreads them:
 * `z.strictObject({...kindShape('io.prx.fs'), rootDir: filePath})`. `experimental` is how an
 * operator enables a kind registered as experimental.
 */
export function kindShape<K extends string>(kind: K): { kind: z.ZodLiteral<K>; experimental: z.ZodOptional<z.ZodBoolean> } {
  return { kind: z.literal(kind), experimental: z.boolean().optional() };
}

/**
 * A closed choice of object forms selected by the value of `key` (e.g. a backoff's `kind`:
 * `constant` or `jittered`). With `default`, an absent key (or an absent object) selects that form.
 * Unlike a zod union, errors name the allowed values and point into the selected form.
 */
export function choice<T extends Readonly<Record<string, z.ZodType>>>(
  key: string,
  forms: T,
  opts: { readonly default?: keyof T & string } = {},
): z.ZodType<z.output<T[keyof T]>> {
  const selected = z.unknown().transform((value, ctx): z.output<T[keyof T]> => {
    if (value === undefined) return missingKey(ctx);
    if (!isPlainObject(value)) {
      ctx.addIssue({ code: 'invalid_type', expected: 'object', input: value });
      return z.NEVER;
    }
    const tag = value[key] ?? opts.default;
    if (tag === undefined) {
      ctx.addIssue({ code: 'invalid_type', expected: 'nonoptional', input: undefined, path: [key] });
      return z.NEVER;
    }
    const form = typeof tag === 'string' && Object.hasOwn(forms, tag) ? forms[tag] : undefined;
    if (form === undefined) {
      ctx.addIssue({ code: 'invalid_value', values: Object.keys(forms), input: tag, path: [key] });
      return z.NEVER;
    }
    return parseNested(ctx, form, { [key]: tag, ...value }) as z.output<T[keyof T]>;
  });
  return opts.default === undefined ? selected : selected.prefault({ [key]: opts.default });
}
