import { PrxError } from '../core/errors.js';
import { type Path, showElem } from './path.js';

/** A prefix pattern that is not `/`-separated segments of `*` or text with `{name}` captures. */
export class PathPatternError extends PrxError {
  readonly pattern: string;
  constructor(pattern: string, reason: string) {
    super('PRX_ERR_PATH_PATTERN', `invalid path pattern ${JSON.stringify(pattern)}: ${reason}`);
    this.pattern = pattern;
  }
}

/** Captured variables, by name. Frozen. */
export type PathVars = Readonly<Record<string, string>>;

// One pattern segment, matched against the shown form of one path element.
type SegmentMatcher =
  | { readonly type: 'any' }
  | { readonly type: 'literal'; readonly text: string }
  // `{name}` alone: the whole element, no regex needed (the common case).
  | { readonly type: 'whole'; readonly name: string }
  | { readonly type: 'regex'; readonly regex: RegExp; readonly names: readonly string[] };

const VAR_NAME = '[A-Za-z_][\\w.-]*';
// Literal text (no whitespace, braces, slash or star) mixed with `{name}` captures.
const CAPTURE_SEGMENT = new RegExp(`^(?:[^\\s{}/*]+|\\{${VAR_NAME}\\})+$`);
const CAPTURE = new RegExp(`\\{(${VAR_NAME})\\}`, 'g');
const WHOLE_CAPTURE = new RegExp(`^\\{(${VAR_NAME})\\}$`);
const REGEX_SPECIAL = /[\\^$.*+?()[\]{}|]/g;

const NO_VARS: PathVars = Object.freeze({});

function compileSegment(pattern: string, segment: string, index: number): SegmentMatcher {
  if (segment === '*') return { type: 'any' };
  if (!CAPTURE_SEGMENT.test(segment)) {
    throw new PathPatternError(
      pattern,
      `segment ${index + 1} (${JSON.stringify(segment)}) must be "*" or text with {name} captures`,
    );
  }
  const whole = WHOLE_CAPTURE.exec(segment);
  if (whole) return { type: 'whole', name: whole[1] as string };
  const names: string[] = [];
  let source = '';
  let last = 0;
  for (const m of segment.matchAll(CAPTURE)) {
    source += segment.slice(last, m.index).replace(REGEX_SPECIAL, '\\$&') + '(.*)';
    names.push(m[1] as string);
    last = m.index + m[0].length;
  }
  if (names.length === 0) return { type: 'literal', text: segment };
  source += segment.slice(last).replace(REGEX_SPECIAL, '\\$&');
  // Anchored and greedy: `{A}-{B}` on `a-b-c` gives A=`a-b`, B=`c`; `{A}{B}` gives A=all, B=''.
  return { type: 'regex', regex: new RegExp(`^${source}$`, 's'), names };
}

/**
 * Linkerd's PathMatcher: a prefix pattern such as `/#/io.prx.fs/*`, `/svc/{service}` or
 * `/k8s/{ns}/{port}-{svc}`. A pattern matches every path that starts with elements matching its
 * segments (a prefix match: `/foo/bar` matches `/foo/bar/bas`). `*` matches any one element;
 * text with `{name}` captures matches an element whole, capturing greedily. Elements are matched
 * in their shown form (`Path.show` escaping), as Linkerd does.
 */
export class PathMatcher {
  /** The pattern text as given. */
  readonly pattern: string;
  /** The capture variables, in pattern order (a name may repeat; the last capture wins). */
  readonly variables: readonly string[];
  readonly #segments: readonly SegmentMatcher[];

  private constructor(pattern: string, segments: readonly SegmentMatcher[]) {
    this.pattern = pattern;
    this.#segments = segments;
    this.variables = segments.flatMap((s) => (s.type === 'whole' ? [s.name] : s.type === 'regex' ? s.names : []));
  }

  /** Parses a pattern; throws {@link PathPatternError} when it is malformed. */
  static parse(pattern: string): PathMatcher {
    if (!pattern.startsWith('/')) throw new PathPatternError(pattern, 'must start with "/"');
    if (pattern === '/') return new PathMatcher(pattern, []);
    const segments = pattern.slice(1).split('/').map((s, i) => compileSegment(pattern, s, i));
    return new PathMatcher(pattern, segments);
  }

  /** Replaces each `{name}` in `template` whose name is in `vars`; other text is kept verbatim. */
  static substitute(template: string, vars: PathVars): string {
    return substituteVars(template, vars);
  }

  /** True when `path` starts with elements matching this pattern (no captures are built). */
  matches(path: Path): boolean {
    return this.#run(path, false) !== undefined;
  }

  /** The captured variables when `path` matches (empty when the pattern has none), else undefined. */
  match(path: Path): PathVars | undefined {
    return this.#run(path, true);
  }

  /** Matches `path` and substitutes its captures into `template`; undefined when it does not match. */
  substitute(path: Path, template: string): string | undefined {
    const vars = this.match(path);
    return vars === undefined ? undefined : substituteVars(template, vars);
  }

  toString(): string {
    return this.pattern;
  }

  #run(path: Path, capture: boolean): PathVars | undefined {
    const segments = this.#segments;
    const elems = path.elems;
    if (elems.length < segments.length) return undefined;
    let captured: [string, string][] | undefined;
    for (let i = 0; i < segments.length; i++) {
      const seg = segments[i] as SegmentMatcher;
      if (seg.type === 'any') continue;
      const shown = showElem(elems[i] as string);
      switch (seg.type) {
        case 'literal':
          if (shown !== seg.text) return undefined;
          break;
        case 'whole':
          if (capture) (captured ??= []).push([seg.name, shown]);
          break;
        case 'regex': {
          const m = seg.regex.exec(shown);
          if (m === null) return undefined;
          if (capture) {
            captured ??= [];
            for (let k = 0; k < seg.names.length; k++) captured.push([seg.names[k] as string, m[k + 1] ?? '']);
          }
          break;
        }
      }
    }
    // fromEntries defines own properties, so a variable named `__proto__` stays a plain key.
    return captured === undefined ? NO_VARS : Object.freeze(Object.fromEntries(captured));
  }
}

/**
 * Replaces each `{name}` in `template` whose name is in `vars` (one pass: substituted values are
 * not scanned again); references to unknown names are kept verbatim, as Linkerd does.
 */
export function substituteVars(template: string, vars: PathVars): string {
  if (!template.includes('{')) return template;
  return template.replace(CAPTURE, (ref: string, name: string) => (Object.hasOwn(vars, name) ? (vars[name] as string) : ref));
}
