const USAGE = `usage: prx <config.yaml|config.json|->
       prx --check <config>   validate the config and print it with defaults
`;

/** Entry point of `bin/prx`. */
export function main(args: string[]): void {
  if (args.length === 0 || args.includes('--help') || args.includes('-h')) {
    process.stdout.write(USAGE);
    if (args.length === 0) process.exitCode = 2;
    return;
  }
  process.stderr.write(`prx: the proxy process is not available in this build\n${USAGE}`);
  process.exitCode = 2;
}
