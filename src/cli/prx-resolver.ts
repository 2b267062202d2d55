const USAGE = `usage: prx-resolver <config.yaml|->
`;

/** Entry point of `bin/prx-resolver`. The resolver service does not exist yet. */
export function main(args: string[]): void {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(USAGE);
    return;
  }
  process.stderr.write(`prx-resolver: the resolver service is not available in this build\n${USAGE}`);
  process.exitCode = 2;
}
