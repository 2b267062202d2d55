const USAGE = `usage: prxctl [--base-url <url>] <command>

Commands for the prx-resolver HTTP controller (coming with the resolver):
  dtab list | get <ns> | create <ns> <file|-> | update <ns> <file|-> | delete <ns>
  delegate <ns> <path>
`;

/** Entry point of `bin/prxctl`. The resolver's controller API does not exist yet. */
export function main(args: string[]): void {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(USAGE);
    return;
  }
  process.stderr.write(`prxctl: the resolver controller is not available in this build\n${USAGE}`);
  process.exitCode = 2;
}
