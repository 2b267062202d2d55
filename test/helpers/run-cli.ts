// Runs one of the executables from source (no build needed): `node --import tsx test/helpers/run-cli.ts prx <args…>`.
// Tests import it for `spawnCli`, which does exactly that and collects the output.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const SELF = fileURLToPath(import.meta.url);
const REPO = fileURLToPath(new URL('../../', import.meta.url));

/** A spawned executable, with its output collected as it arrives. */
export interface SpawnedCli {
  readonly child: ChildProcess;
  /** Everything written to stdout / stderr so far. */
  readonly stdout: () => string;
  readonly stderr: () => string;
  /** Settles with the exit code (or the signal's name) once the process has ended. */
  readonly exited: Promise<number | string>;
  /** Resolves with the first JSON log line satisfying `match`; rejects if the process ends first. */
  logLine(match: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
}

/**
 * Spawns `prx`, `prx-resolver` or `prxctl` from source, in the repository root. `stdin`, if given,
 * is written and closed; `env` adds to the test's environment.
 */
export function spawnCli(
  name: 'prx' | 'prx-resolver' | 'prxctl',
  args: readonly string[],
  opts: { readonly env?: Readonly<Record<string, string>>; readonly stdin?: string } = {},
): SpawnedCli {
  const child = spawn(process.execPath, ['--import', 'tsx', SELF, name, ...args], {
    cwd: REPO,
    env: { ...process.env, ...opts.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr?.on('data', (c: Buffer) => (err += c.toString('utf8')));
  if (opts.stdin !== undefined) child.stdin?.end(opts.stdin);
  else child.stdin?.end();
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  const lines = (): Record<string, unknown>[] =>
    out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    async logLine(match, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      let ended = false;
      void exited.then(() => (ended = true));
      for (;;) {
        const found = lines().find(match);
        if (found) return found;
        if (ended || Date.now() > deadline) {
          throw new Error(`no matching log line (${ended ? 'process ended' : 'timed out'}); stdout:\n${out}\nstderr:\n${err}`);
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    },
  };
}

if (process.argv[1] === SELF) {
  const [name, ...args] = process.argv.slice(2);
  if (name !== 'prx' && name !== 'prx-resolver' && name !== 'prxctl') {
    console.error(`usage: run-cli.ts prx|prx-resolver|prxctl [args…]`);
    process.exit(2);
  }
  const cli = (await import(`../../src/cli/${name}.ts`)) as { main(argv: string[]): unknown };
  await cli.main(args);
}
