import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type CliCommand, CliUsageError } from './operator/command.js';
import { loadRuntimeConfig } from '@sluice/local/runtime-config';

/** The subcommand modules, each exporting `commands: CliCommand[]`; missing ones are skipped. */
export const COMMAND_MODULES = [
  './operator/keys.js',
  './operator/orgs.js',
  './operator/data.js',
  './operator/erase.js',
] as const;

/** Where the dispatcher writes. */
export interface CliIo {
  out(line: string): void;
  err(line: string): void;
}

const consoleIo: CliIo = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};

/** The usage text listing every command. */
export function usageText(commands: readonly CliCommand[]): string {
  const lines = ['Usage: npm run sluice -- <group> <command> [options]', '', 'Commands:'];
  for (const command of [...commands].sort((a, b) => a.name.localeCompare(b.name))) {
    lines.push(`  ${command.usage}`);
  }
  if (commands.length === 0) lines.push('  (none available yet)');
  return lines.join('\n');
}

/** The command whose name is the longest prefix of argv (`keys create ...` → `keys create`). */
export function findCommand(
  argv: readonly string[],
  commands: readonly CliCommand[],
): { command: CliCommand; args: string[] } | undefined {
  let best: { command: CliCommand; args: string[] } | undefined;
  for (const command of commands) {
    const words = command.name.split(/\s+/);
    if (words.every((word, index) => argv[index] === word)) {
      if (!best || words.length > best.command.name.split(/\s+/).length) {
        best = { command, args: argv.slice(words.length) };
      }
    }
  }
  return best;
}

/**
 * Runs one invocation and returns its exit code: 0 on success, 1 when the command failed, 2 for an unknown
 * command or a bad invocation (with the usage). `prepare` runs just before the command (the dispatcher
 * loads the configuration there) and may throw.
 */
export async function runCli(
  argv: readonly string[],
  commands: readonly CliCommand[],
  io: CliIo = consoleIo,
  prepare: () => void = () => {},
): Promise<number> {
  if (argv.length === 0 || argv[0] === 'help' || argv[0] === '--help' || argv[0] === '-h') {
    io.out(usageText(commands));
    return argv.length === 0 ? 2 : 0;
  }
  const found = findCommand(argv, commands);
  if (!found) {
    io.err(`Unknown command: ${argv.join(' ')}`);
    io.err(usageText(commands));
    return 2;
  }
  try {
    prepare();
    await found.command.run(found.args);
    return 0;
  } catch (error) {
    if (error instanceof CliUsageError || isParseArgsError(error)) {
      io.err((error as Error).message);
      io.err(`Usage: npm run sluice -- ${found.command.usage}`);
      return 2;
    }
    io.err(`Error: ${(error as Error).message ?? String(error)}`);
    if (process.env.SLUICE_DEBUG) io.err(String((error as Error).stack));
    return 1;
  }
}

/** node:util parseArgs throws TypeErrors with ERR_PARSE_ARGS_* codes for unknown or malformed options. */
function isParseArgsError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS');
}

/** Imports the subcommand modules that exist. */
export async function loadCommands(
  modules: readonly string[] = COMMAND_MODULES,
  io: CliIo = consoleIo,
): Promise<CliCommand[]> {
  const commands: CliCommand[] = [];
  for (const specifier of modules) {
    const url = new URL(specifier, import.meta.url);
    const source = fileURLToPath(url).replace(/\.js$/, '.ts');
    if (!existsSync(source) && !existsSync(fileURLToPath(url))) continue;
    try {
      const module = (await import(url.href)) as { commands?: CliCommand[] };
      commands.push(...(module.commands ?? []));
    } catch (error) {
      io.err(`(skipping ${specifier}: ${(error as Error).message})`);
    }
  }
  return commands;
}

/**
 * Runs an operator command (`keys …`, `seed`, `events …`, `subscribers …`) as `npm run sluice` does, on the
 * tables of a running `npm start` or of the stack the environment describes, and returns its exit code.
 */
export async function runOperatorCli(argv: readonly string[], io: CliIo = consoleIo): Promise<number> {
  // Keep the output to what the command prints (the SDK's Node 22 notice goes to stderr otherwise).
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  // The commands read their tables from process.env when they run (readCliTables).
  let configError: unknown;
  try {
    loadRuntimeConfig();
  } catch (error) {
    configError = error;
  }
  const commands = await loadCommands(COMMAND_MODULES, io);
  return runCli(argv, commands, io, () => {
    if (configError) throw configError;
  });
}

/* `node packages/cli/src/operator.ts <group> <command> ...` (`npm run sluice` reaches it through program.ts). */
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.exitCode = await runOperatorCli(process.argv.slice(2));
}
