import { readdir, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { PrxError } from '../../core/errors.js';
import { parseDataSize } from '../../config/index.js';

/**
 * Access-log roll policies, after twitter util-logging's `Policy` (`Never`, `Hourly`, `Daily`,
 * `Weekly(n)`, `MaxSize(bytes)`), and the rotated-file naming and pruning of its `FileHandler`.
 *
 * All calendar arithmetic is in UTC (util-logging uses the JVM's default zone; UTC keeps rolls
 * deterministic across hosts). A rotated file is named `<stem>-<suffix><ext>`, where `<stem>` and
 * `<ext>` split the live file's base name at its last dot (`access.log` → `access`, `.log`; no dot →
 * no ext) and `<suffix>` is the time the rotated file was opened: `yyyyMMdd-HH` (Hourly),
 * `yyyyMMdd` (Daily, Weekly), `yyyyMMdd-HHmmss` (size). Should that name already exist (two size
 * rolls within one second), `_001`, `_002`, … is appended to the suffix so nothing is overwritten.
 */
export type RollPolicy =
  | { readonly kind: 'never' }
  | { readonly kind: 'hourly' }
  | { readonly kind: 'daily' }
  /** Rolls at 00:00 UTC on `dayOfWeek` (0 = Sunday … 6 = Saturday). */
  | { readonly kind: 'weekly'; readonly dayOfWeek: number }
  /** Rolls before a write that would make the file exceed `bytes`. */
  | { readonly kind: 'maxSize'; readonly bytes: number };

/** Thrown by {@link parseRollPolicy} for text that names no policy. */
export class InvalidRollPolicyError extends PrxError {
  constructor(text: string, reason?: string) {
    super(
      'PRX_ERR_ACCESS_LOG_ROLL_POLICY',
      `invalid access-log roll policy '${text}': ${reason ?? 'expected Never, Hourly, Daily, Weekly(n) with n a day of the week 0-6 (0 = Sunday), or a data size such as 3.megabytes or 1.gigabyte'}`,
    );
  }
}

const WEEKLY = /^weekly\((\d+)\)$/;

/**
 * Parses a roll-policy text: `Never`, `Hourly`, `Daily`, `Weekly(n)` (keywords case-insensitive,
 * n = 0 … 6, 0 = Sunday) or a data size (`3.megabytes`, `1.gigabyte`; must be > 0).
 * @throws InvalidRollPolicyError for anything else.
 */
export function parseRollPolicy(text: string): RollPolicy {
  const t = text.trim();
  const lower = t.toLowerCase();
  if (lower === 'never') return { kind: 'never' };
  if (lower === 'hourly') return { kind: 'hourly' };
  if (lower === 'daily') return { kind: 'daily' };
  const weekly = WEEKLY.exec(lower);
  if (weekly) {
    const day = Number(weekly[1]);
    if (day > 6) throw new InvalidRollPolicyError(text, `day of week ${day} is out of range 0-6 (0 = Sunday)`);
    return { kind: 'weekly', dayOfWeek: day };
  }
  const bytes = parseDataSize(t);
  if (bytes !== undefined) {
    if (bytes <= 0) throw new InvalidRollPolicyError(text, 'a size policy must be larger than 0 bytes');
    return { kind: 'maxSize', bytes };
  }
  throw new InvalidRollPolicyError(text);
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** The first roll time strictly after `openedAt` (ms since epoch), or undefined for untimed policies. */
export function nextRollTime(policy: RollPolicy, openedAt: number): number | undefined {
  switch (policy.kind) {
    case 'never':
    case 'maxSize':
      return undefined;
    case 'hourly':
      return Math.floor(openedAt / HOUR) * HOUR + HOUR;
    case 'daily':
      return Math.floor(openedAt / DAY) * DAY + DAY;
    case 'weekly': {
      const midnight = Math.floor(openedAt / DAY) * DAY;
      const today = new Date(midnight).getUTCDay();
      const ahead = (policy.dayOfWeek - today + 7) % 7 || 7;
      return midnight + ahead * DAY;
    }
  }
}

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/** The time suffix of a file opened at `openedAt` that rolls under `policy` (see {@link RollPolicy}). */
export function rollSuffix(policy: RollPolicy, openedAt: number): string {
  const d = new Date(openedAt);
  const day = `${pad(d.getUTCFullYear(), 4)}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}`;
  switch (policy.kind) {
    case 'hourly':
      return `${day}-${pad(d.getUTCHours())}`;
    case 'daily':
    case 'weekly':
      return day;
    case 'never':
    case 'maxSize':
      return `${day}-${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}`;
  }
}

/** Splits a log path's base name into stem and extension at its last dot (`a.log` → `a`, `.log`). */
function stemAndExt(path: string): { stem: string; ext: string } {
  const name = basename(path);
  const dot = name.lastIndexOf('.');
  return dot > 0 ? { stem: name.slice(0, dot), ext: name.slice(dot) } : { stem: name, ext: '' };
}

/**
 * The rotated name for `path` (live file) with `suffix`; `serial` > 0 adds `_NNN` to
 * disambiguate a name already taken.
 */
export function rotatedPath(path: string, suffix: string, serial = 0): string {
  const { stem, ext } = stemAndExt(path);
  const tag = serial > 0 ? `_${pad(serial, 3)}` : '';
  return join(dirname(path), `${stem}-${suffix}${tag}${ext}`);
}

/**
 * Deletes the oldest rotated siblings of `path` so that at most `rotateCount` remain (no-op when
 * `rotateCount` < 0). Rotated siblings are files in the same directory, other than the live file,
 * named `<stem>-…<ext>`; oldest = first by name, which is chronological given the suffixes.
 */
export async function pruneRotated(path: string, rotateCount: number): Promise<void> {
  if (rotateCount < 0) return;
  const { stem, ext } = stemAndExt(path);
  const live = basename(path);
  const rotated = (await readdir(dirname(path)))
    .filter((n) => n !== live && n.startsWith(`${stem}-`) && n.endsWith(ext))
    .sort();
  const excess = rotated.slice(0, Math.max(0, rotated.length - rotateCount));
  for (const name of excess) await unlink(join(dirname(path), name));
}
