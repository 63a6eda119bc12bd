/**
 * One subcommand of the `npm run sluice` CLI. Modules under `packages/cli/src/operator/` export
 * `commands: CliCommand[]`; the dispatcher (`cli.ts`) matches `name` against the first words of argv.
 */
export interface CliCommand {
  /** The words that select the command, e.g. `'keys create'`. */
  name: string;
  /** One line shown in the usage text, e.g. `'keys create --workspace <id> --role <role> [--json]'`. */
  usage: string;
  /** Runs the command with the arguments after its name (parse them with `node:util` `parseArgs`). */
  run(args: string[]): Promise<void>;
}

/** Thrown by a command for a bad invocation: the dispatcher prints the message and the usage, exit code 2. */
export class CliUsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CliUsageError';
  }
}
