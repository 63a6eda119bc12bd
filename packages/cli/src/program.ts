/**
 * The `sluice` command line, one commander program: `data-exports …`, `files` and `mcp` talk to the HTTP API
 * only; the operator groups (`keys`, `orgs`, `seed`, `events`, `subscribers`, `erase`, built in `operator/`) work
 * on the tables directly. One usage error (`UsageError`, exit code 2, as commander's own refusals) and one
 * printer ({@link runSluice}).
 */
import { Command, CommanderError } from 'commander';
import { type CliContext, ExitError, UsageError } from './context.js';
import { backfillCommand } from './backfills.js';
import { dataExportsCommand } from './data-exports.js';
import { filesCommand } from './files.js';
import { type ConnectionOptions, resolveConnection } from './connection.js';

/** The operator command groups, with what they do. */
export const OPERATOR_GROUPS = {
  keys: 'operator: API keys, in the control table',
  orgs: 'operator: link child workspaces to a parent organisation, in the control table',
  seed: 'operator: generated test data',
  events: 'operator: ingest or redrive events, list or redrive rejected ones',
  subscribers: 'operator: upsert or delete subscribers',
  erase: "operator: delete a subscriber's or a workspace's rows from the event log and the archive",
} as const;

/** Builds the operator commands, their output going to the context (tests give their own). */
export type OperatorCommandsLoader = (context: CliContext) => Promise<Command[]>;

/**
 * The operator commands, loaded when one is run: they bring the AWS SDK and the stores with them. Each works on
 * the tables of a running `npm start` or of the stack the environment describes, read when it runs
 * (`loadRuntimeConfig`: a configuration error is reported only then, not for `--help`).
 */
export const loadOperatorCommands: OperatorCommandsLoader = async (context) => {
  const [{ createKeysCommands }, { createDataCommands }, { createEraseCommands }, { createOrgsCommands }] =
    await Promise.all([
      import('./operator/keys.js'),
      import('./operator/data.js'),
      import('./operator/erase.js'),
      import('./operator/orgs.js'),
    ]);
  const output = { out: context.out };
  return [
    ...createKeysCommands(output),
    ...createDataCommands({ ...output, err: context.err }),
    ...createEraseCommands(output),
    ...createOrgsCommands(output),
  ];
};

/** True when `argv` runs (or asks for help on) an operator command. */
function isOperatorInvocation(argv: readonly string[]): boolean {
  const [first, second] = argv;
  const isGroup = (word: string | undefined) => word !== undefined && Object.hasOwn(OPERATOR_GROUPS, word);
  return isGroup(first) || (first === 'help' && isGroup(second));
}

/** The `mcp` command: resolves the API first (failing fast), then serves until the client closes stdin. */
function mcpCommand(context: CliContext): Command {
  return new Command('mcp')
    .description('serve the data export tools to an MCP client on stdio')
    .option('--api-url <url>', 'API base URL (default: $SLUICE_API_URL, or npm start)')
    .option('--api-key <key>', 'API key (default: $SLUICE_API_KEY, or npm start)')
    .action(async (options: ConnectionOptions) => {
      const connection = resolveConnection(options, context.env, context.localJsonFile);
      const { serveMcp } = await import('./mcp.js');
      context.err(`sluice mcp: serving the data export tools on stdio for ${connection.apiUrl}`);
      await serveMcp(connection, context.fetch);
    });
}

/**
 * The program, its output going to the context. The operator groups are `operatorCommands` when given; otherwise
 * each is listed in the help only (its commands are loaded when one is run: {@link runSluice}).
 */
export function buildProgram(context: CliContext, operatorCommands: readonly Command[] = []): Command {
  const program = new Command('sluice')
    .description('Sluice: data exports to your own buckets')
    .enablePositionalOptions()
    .showHelpAfterError('(add --help for usage)')
    .configureOutput({
      writeOut: (text) => context.out(text.replace(/\n$/, '')),
      writeErr: (text) => context.err(text.replace(/\n$/, '')),
    })
    .exitOverride();
  program.addCommand(dataExportsCommand(context).addCommand(backfillCommand(context)));
  program.addCommand(mcpCommand(context));
  program.addCommand(filesCommand(context));
  for (const [group, description] of Object.entries(OPERATOR_GROUPS)) {
    const command = operatorCommands.find((candidate) => candidate.name() === group);
    if (command) program.addCommand(command.description(description));
    else program.command(group).description(description).helpOption(false).argument('[args...]');
  }
  // Subcommands print their errors through the same output and exit the same way.
  const configure = (command: Command) => {
    for (const sub of command.commands) {
      sub
        .exitOverride()
        .configureOutput(program.configureOutput())
        .showHelpAfterError('(add --help for usage)');
      configure(sub);
    }
  };
  configure(program);
  return program;
}

/**
 * Runs `sluice <argv>` and returns the exit code: 0 on success, 1 when the API or the run said no, 2 for a
 * bad invocation (unknown command or option, missing argument).
 */
export async function runSluice(
  argv: readonly string[],
  context: CliContext,
  loadOperator: OperatorCommandsLoader = loadOperatorCommands,
): Promise<number> {
  let program: Command;
  try {
    program = buildProgram(context, isOperatorInvocation(argv) ? await loadOperator(context) : []);
  } catch (error) {
    context.err(`Error: ${(error as Error).message ?? String(error)}`);
    return 1;
  }
  if (argv.length === 0) {
    program.outputHelp();
    return 2;
  }
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof ExitError) return error.exitCode;
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    if (error instanceof UsageError) {
      context.err(`Error: ${error.message}`);
      return 2;
    }
    context.err(`Error: ${(error as Error).message ?? String(error)}`);
    if (context.env.SLUICE_DEBUG) context.err(String((error as Error).stack));
    return 1;
  }
}
