/**
 * The operator commands (`keys`, `seed`, `events`, `subscribers`, `erase`, `orgs`) are commander commands like
 * `data-exports`: each module under `operator/` builds its top-level commands, `program.ts` adds them. A bad
 * invocation throws `UsageError` (`context.ts`); `runSluice` prints every error the one way and sets the exit code.
 */
import { Command } from 'commander';

/** A group of subcommands (`keys` of `keys create`, …); `program.ts` gives it its description. */
export function commandGroup(name: string, subcommands: readonly Command[]): Command {
  const group = new Command(name);
  for (const subcommand of subcommands) group.addCommand(subcommand);
  return group;
}

/**
 * Parses `argv` (`keys create --workspace w`) against `commands` as the CLI does, and runs the command: for the
 * tests of one module. Rejects with the command's own error, or commander's for an invocation it refuses.
 */
export async function runCommands(commands: readonly Command[], argv: readonly string[]): Promise<void> {
  const program = new Command('sluice').exitOverride().configureOutput({ writeErr: () => undefined });
  for (const command of commands) program.addCommand(command);
  const quiet = (command: Command) => {
    for (const sub of command.commands) {
      sub.exitOverride().configureOutput(program.configureOutput());
      quiet(sub);
    }
  };
  quiet(program);
  await program.parseAsync([...argv], { from: 'user' });
}
