/**
 * The `sluice` command line: `data-exports …` and `mcp` talk to the HTTP API only; the operator groups
 * (`keys`, `orgs`, `seed`, `events`, `subscribers`, `erase`) work on the tables directly and are passed, arguments untouched,
 * to their dispatcher in the local runtime.
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

/** Runs an operator command and returns its exit code. */
export type OperatorRunner = (argv: string[]) => Promise<number>;

/** Loaded when used: the operator commands bring the AWS SDK and the stores with them. */
const runOperator: OperatorRunner = async (argv) => {
  const { runOperatorCli } = await import('./operator.js');
  return runOperatorCli(argv);
};

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

/** The program, its output going to the context. */
export function buildProgram(context: CliContext, operator: OperatorRunner = runOperator): Command {
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
    program
      .command(group)
      .description(description)
      .helpOption(false)
      .allowUnknownOption()
      .allowExcessArguments()
      .passThroughOptions()
      .argument('[args...]')
      .action(async (args: string[]) => {
        const code = await operator([group, ...args]);
        if (code !== 0) throw new ExitError(code);
      });
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
  operator?: OperatorRunner,
): Promise<number> {
  const program = buildProgram(context, operator);
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
