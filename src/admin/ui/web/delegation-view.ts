/**
 * Renders a `delegator.json` tree step by step: each node shows the path looked up, the dentry
 * that rewrote it, and for dead ends why (no dentry matched, the namer found nothing, the dtab
 * says fail, a namer error); leaves show the bound addresses. Under each rewritten path it also
 * lists the dentries of the dtab whose prefix matches it, in the order they are tried (last
 * first), which Linkerd's playground never showed.
 */
import { el } from './common.js';

/** A node of `delegator.json` (see src/naming/delegator.ts). */
export interface DelegateJson {
  readonly type: 'delegate' | 'alt' | 'union' | 'leaf' | 'neg' | 'fail' | 'empty' | 'exception' | 'transformation';
  readonly path: string;
  readonly dentry?: { readonly prefix: string; readonly dst: string };
  readonly delegate?: DelegateJson;
  readonly alt?: readonly DelegateJson[];
  readonly union?: readonly { readonly weight: number; readonly tree: DelegateJson }[];
  readonly tree?: DelegateJson;
  readonly bound?: { readonly addr: AddrJson; readonly id: string; readonly path: string };
  readonly message?: string;
  readonly name?: string;
}

interface AddrJson {
  readonly type: string;
  readonly addrs?: readonly { readonly ip: string; readonly port: number }[];
}

/** One `prefix => dst` of the dtab being explained, with its position (1-based). */
export interface ParsedDentry {
  readonly index: number;
  readonly prefix: string;
  readonly dst: string;
}

/**
 * Splits a dtab into dentries for the "tried" hints. Approximate on purpose (the server's parse
 * is authoritative): it only needs prefixes, which contain no `;` or `=>`.
 */
export function splitDtab(dtab: string): ParsedDentry[] {
  const out: ParsedDentry[] = [];
  // `#` starts a comment only where whitespace may stand (so `/#/io.prx.fs` is a path).
  for (const part of dtab.replace(/(^|\s)#[^\n]*/g, '$1').split(';')) {
    const arrow = part.indexOf('=>');
    if (arrow < 0) continue;
    const prefix = part.slice(0, arrow).trim();
    const dst = part.slice(arrow + 2).trim();
    if (prefix !== '') out.push({ index: out.length + 1, prefix, dst });
  }
  return out;
}

const segments = (p: string): string[] => p.split('/').filter((s) => s !== '');

/** Whether `prefix` (possibly with `*` segments) is a prefix of `path`. */
export function prefixMatches(prefix: string, path: string): boolean {
  const pre = segments(prefix);
  const segs = segments(path);
  if (pre.length > segs.length) return false;
  return pre.every((s, i) => s === '*' || s === segs[i]);
}

function kindLabel(t: DelegateJson['type']): string {
  return t === 'delegate' ? 'rewrite' : t === 'transformation' ? 'transform' : t;
}

function why(node: DelegateJson): string | undefined {
  switch (node.type) {
    case 'neg':
      return node.path.startsWith('/#/') || node.path.startsWith('/$/')
        ? 'the namer has no such name'
        : node.path === '~'
          ? 'the dtab maps this to ~ (negative: nothing)'
          : 'no dentry prefix matches this path';
    case 'fail':
      return 'the dtab says fail (!): requests to it fail without falling back';
    case 'empty':
      return 'an empty set ($): no endpoints';
    case 'exception':
      return `error: ${node.message ?? 'unknown'}`;
    case 'alt':
      return 'alternatives: the first that is not negative wins';
    case 'union':
      return 'weighted union: traffic is split by weight';
    case 'delegate':
    case 'leaf':
    case 'transformation':
      return undefined;
  }
}

function addresses(addr: AddrJson | undefined): HTMLElement {
  if (!addr) return el('span', { class: 'why' }, 'no address');
  if (addr.type !== 'bound') return el('span', { class: 'why bad' }, `address ${addr.type}`);
  const list = addr.addrs ?? [];
  if (list.length === 0) return el('span', { class: 'why warn' }, 'bound, but no endpoints');
  return el('span', { class: 'addrs' }, list.map((a) => `${a.ip}:${a.port}`).join(', '));
}

function triedHint(path: string, dentries: readonly ParsedDentry[]): HTMLElement | undefined {
  if (path === '~' || path.startsWith('/#/') || path.startsWith('/$/') || dentries.length === 0) return undefined;
  const matching = dentries.filter((d) => prefixMatches(d.prefix, path)).reverse();
  if (matching.length === 0) return el('div', { class: 'tried' }, 'no dentry prefix matches this path');
  return el('div', { class: 'tried' }, `dentries matching, in the order tried: ${matching.map((d) => `#${d.index} ${d.prefix} => ${d.dst}`).join('   ·   ')}`);
}

/** The tree as nested lists. */
export function renderDelegation(root: DelegateJson, dentries: readonly ParsedDentry[]): HTMLElement {
  const item = (node: DelegateJson, weight?: number): HTMLLIElement => {
    const reason = why(node);
    const line = el('div', { class: `node ${node.type}`, 'data-type': node.type },
      weight === undefined ? null : el('span', { class: 'badge' }, `weight ${weight}`),
      el('span', { class: 'kind' }, kindLabel(node.type)),
      el('code', { class: 'path' }, node.path),
      node.dentry && node.dentry.prefix !== '' ? el('span', { class: 'dentry' }, `via ${node.dentry.prefix} => ${node.dentry.dst}`) : null,
      node.type === 'transformation' ? el('span', { class: 'why' }, `transformer ${node.name ?? ''}`) : null,
      reason ? el('span', { class: 'why' }, reason) : null,
      node.type === 'leaf' || node.type === 'transformation' ? addresses(node.bound?.addr) : null,
    );
    const li = el('li', {}, line);
    if (node.type === 'delegate' || node.type === 'alt' || node.type === 'union') {
      const hint = triedHint(node.path, dentries);
      if (hint) li.append(hint);
    }
    const kids: HTMLLIElement[] = [];
    if (node.delegate) kids.push(item(node.delegate));
    if (node.tree) kids.push(item(node.tree));
    for (const a of node.alt ?? []) kids.push(item(a));
    for (const u of node.union ?? []) kids.push(item(u.tree, u.weight));
    if (kids.length > 0) li.append(el('ul', {}, ...kids));
    return li;
  };
  return el('ul', { class: 'tree', 'data-testid': 'delegation-tree' }, item(root));
}
