import type { Document, LineCounter, Node, Pair } from 'yaml';
import { ConfigErrorCode, type ConfigIssue, type ConfigPath } from './errors.js';
import type { YamlLibrary } from './yaml-library.js';

// Bounds on a config document, checked before it becomes data: a config is a few kilobytes
// written by an operator, so anything far past that is a mistake or an attack (a YAML alias
// bomb, brackets nested thousands deep) and is refused with where it is, not parsed until the
// process runs out of memory or stack.

/** The largest config file or standard input read (bytes). */
export const MAX_CONFIG_BYTES = 4 * 1024 * 1024;

/** The most values (scalars and collections) a config may expand to, aliases expanded. */
export const MAX_CONFIG_VALUES = 100_000;

/** The deepest nesting of collections in a config. */
export const MAX_CONFIG_DEPTH = 64;

/** The longest string value in a config (a dtab has its own, smaller bound in the schema). */
export const MAX_CONFIG_STRING_CHARS = 128 * 1024;

/**
 * Flow collections (`[`, `{`) nested deeper than {@link MAX_CONFIG_DEPTH}, found by a scan of the
 * text before it is parsed: the parser's work on such text grows until the process dies. Quoted
 * strings and comments are skipped; the scan may over-count brackets inside plain scalars, which
 * only matters for text no config holds.
 */
export function flowNestingIssue(text: string, at: (offset: number) => string): ConfigIssue | undefined {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > MAX_CONFIG_DEPTH) return boundIssue([], `collections nested deeper than ${MAX_CONFIG_DEPTH} levels at ${at(i)}`);
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
      if (depth > 0) depth--;
    } else if (c === 0x22 /* " */) {
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c /* \ */) i++;
    } else if (c === 0x27 /* ' */) {
      // In single quotes '' is an escaped quote: the scan just closes and reopens.
      for (i++; i < text.length && text.charCodeAt(i) !== 0x27; i++);
    } else if (c === 0x23 /* # */ && (i === 0 || /\s/.test(text[i - 1] as string))) {
      while (i < text.length && text.charCodeAt(i) !== 0x0a) i++;
    }
  }
  return undefined;
}

/**
 * The first bound a parsed document breaks, with the key path and position where it breaks (or
 * an alias that is recursive or names no anchor, found on the same walk):
 * nesting deeper than {@link MAX_CONFIG_DEPTH}, a string longer than
 * {@link MAX_CONFIG_STRING_CHARS}, or — for an alias bomb — the innermost value that expands
 * to more than {@link MAX_CONFIG_VALUES} values. The walk is iterative and counts each anchored
 * value once, so its cost is the document's size, not its expansion.
 */
export function documentBoundIssue(yaml: YamlLibrary, doc: Document, lines: LineCounter): ConfigIssue | undefined {
  const { isAlias, isCollection, isPair, isScalar, isSeq } = yaml;
  const at = (node: Node | Pair): string => {
    const offset = (isPair(node) ? (node.key as Node | null)?.range?.[0] : node.range?.[0]) ?? 0;
    const { line, col } = lines.linePos(offset);
    return `line ${line}, column ${col}`;
  };
  if (doc.contents === null) return undefined;
  const sizes = new Map<unknown, number>();
  const anchors = new Map<string, Node>();
  // Frames of an iterative post-order walk: a node is entered (children pushed), then exited.
  interface Frame {
    readonly node: Node | Pair;
    readonly path: ConfigPath;
    readonly depth: number;
    entered: boolean;
  }
  const stack: Frame[] = [{ node: doc.contents, path: [], depth: 0, entered: false }];
  while (stack.length > 0) {
    const frame = stack[stack.length - 1] as Frame;
    const { node, path, depth } = frame;
    if (!frame.entered) {
      frame.entered = true;
      if (depth > MAX_CONFIG_DEPTH) return boundIssue(path, `collections nested deeper than ${MAX_CONFIG_DEPTH} levels at ${at(node)}`);
      if (!isPair(node) && node.anchor !== undefined) anchors.set(node.anchor, node);
      const children: Frame[] = [];
      if (isPair(node)) {
        if (node.key !== null && typeof node.key === 'object') children.push({ node: node.key as Node, path, depth, entered: false });
        if (node.value !== null) children.push({ node: node.value as Node, path: [...path, keyName(yaml, node)], depth, entered: false });
      } else if (isCollection(node)) {
        node.items.forEach((item, i) => {
          if (item === null || typeof item !== 'object') return;
          children.push({ node: item as Node | Pair, path: isSeq(node) ? [...path, i] : path, depth: depth + 1, entered: false });
        });
      }
      // Pushed in reverse so that children are visited in document order (anchors before aliases).
      for (let i = children.length - 1; i >= 0; i--) stack.push(children[i] as Frame);
      continue;
    }
    stack.pop();
    let size: number;
    if (isPair(node)) {
      size = (sizes.get(node.key) ?? 0) + (sizes.get(node.value) ?? 0);
    } else if (isAlias(node)) {
      const target = anchors.get(node.source);
      if (target === undefined) return syntaxIssue(`alias *${node.source} names no anchor before it, at ${at(node)}`);
      // A value entered but not yet left is an ancestor: the alias would make the data cyclic.
      const targetSize = sizes.get(target);
      if (targetSize === undefined) return syntaxIssue(`recursive alias *${node.source} at ${at(node)}`);
      size = targetSize;
    } else if (isCollection(node)) {
      size = 1;
      for (const item of node.items) size += sizes.get(item) ?? 0;
    } else {
      size = 1;
      if (isScalar(node) && typeof node.value === 'string' && node.value.length > MAX_CONFIG_STRING_CHARS) {
        return boundIssue(path, `a string longer than ${MAX_CONFIG_STRING_CHARS} characters (${node.value.length}) at ${at(node)}`, node.value);
      }
    }
    if (size > MAX_CONFIG_VALUES) {
      return boundIssue(
        path,
        `expands to more than ${MAX_CONFIG_VALUES} values at ${at(node)} (YAML aliases repeat what they name: an alias bomb?)`,
      );
    }
    sizes.set(node, size);
  }
  return undefined;
}

function keyName(yaml: YamlLibrary, pair: Pair): string {
  return yaml.isScalar(pair.key) ? String(pair.key.value) : '<key>';
}

function syntaxIssue(message: string): ConfigIssue {
  return { path: [], message, code: ConfigErrorCode.syntax };
}

function boundIssue(path: ConfigPath, message: string, value?: unknown): ConfigIssue {
  return { path, message, code: ConfigErrorCode.tooLarge, ...(value === undefined ? {} : { value }) };
}
