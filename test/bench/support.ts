// What the tests of the benchmark scripts share: running a script, its option errors, and its own
// marked section in a Markdown file (written between earlier and later text, replacing a stale one).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('../../', import.meta.url));

export interface Ran {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs node with `args` in the repository; killed after `timeoutMs`. */
export function run(args: readonly string[], timeoutMs = 60_000): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: REPO });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * Each of `bad` makes `script` exit 2 with an error prefixed by `name`; another suite's mode
 * (--report, with other suites' options) makes it skip itself with exit 0.
 */
export async function assertOptionErrors(script: string, name: string, bad: readonly (readonly string[])[]): Promise<void> {
  const results = await Promise.all(bad.map((args) => run([script, ...args])));
  results.forEach((r, i) => {
    assert.equal(r.code, 2, `${bad[i]!.join(' ')}: ${r.stderr}`);
    assert.ok(r.stderr.startsWith(`${name}: `), r.stderr);
  });
  const skipped = await run([script, '--report', '/nowhere', '--conns', '16']);
  assert.equal(skipped.code, 0, skipped.stderr);
  assert.match(skipped.stdout, /skipped \(--report is another suite's mode\)/);
}

const AFTER = '\n## Something after it\n';

/**
 * Runs `script` with `args` plus `--md` naming `md`, which first holds `earlier`, a stale section of
 * `name` (scripts/`name`.mjs) headed `heading`, and later text; checks the run exited 0 and that
 * the file kept the earlier and later text around one fresh section. The run and the file's text.
 */
export async function runIntoSection(
  script: string,
  section: { readonly name: string; readonly heading: string; readonly md: string; readonly earlier: string },
  args: readonly string[],
  timeoutMs?: number,
): Promise<{ readonly ran: Ran; readonly text: string }> {
  const { name, heading, md, earlier } = section;
  writeFileSync(md, `${earlier}<!-- ${name}: begin (scripts/${name}.mjs replaces this section) -->\n${heading} — stale\n<!-- ${name}: end -->\n${AFTER}`);
  const ran = await run([script, ...args, '--md', md], timeoutMs);
  assert.equal(ran.code, 0, `${ran.stdout}\n${ran.stderr}`);
  const text = readFileSync(md, 'utf8');
  assert.ok(text.startsWith(earlier), 'what was before the section is kept');
  assert.ok(text.endsWith(AFTER), 'what was after the section is kept');
  assert.doesNotMatch(text, /stale/);
  assert.equal(text.split(heading).length, 2, 'one section');
  return { ran, text };
}

/** A scratch folder made before the suite's tests and removed after them: call within a describe. */
export function scratchDir(prefix: string): () => string {
  let dir = '';
  before(() => (dir = mkdtempSync(join(tmpdir(), prefix))));
  after(() => rmSync(dir, { recursive: true, force: true }));
  return () => dir;
}
