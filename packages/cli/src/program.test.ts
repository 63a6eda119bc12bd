import { Readable } from 'node:stream';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { type CliContext, UsageError } from './context.js';
import { commandGroup } from './operator/command.js';
import { runSluice } from './program.js';

/** Runs `sluice <argv>` in process with `commands` as the operator commands; what it printed and its exit code. */
async function sluice(argv: string[], commands: () => Command[]) {
  const out: string[] = [];
  const err: string[] = [];
  const context: CliContext = {
    out: (line) => out.push(line),
    err: (line) => err.push(line),
    env: {},
    stdin: Readable.from([]),
    localJsonFile: '/nonexistent/.sluice/local.json',
  };
  let loaded = false;
  const code = await runSluice(argv, context, async () => {
    loaded = true;
    return commands();
  });
  return { code, out, err, loaded };
}

/** A `keys create` and a `seed` that record their calls, the operator commands' shape. */
function operatorCommands(calls: unknown[][]): Command[] {
  const create = new Command('create')
    .option('--workspace <id>')
    .option('--json')
    .action(async (values: { workspace?: string; json?: boolean }) => {
      if (!values.workspace) throw new UsageError('--workspace <id> is required');
      calls.push(['keys create', values]);
    });
  const seed = new Command('seed').action(async () => {
    throw new Error('database unreachable');
  });
  return [commandGroup('keys', [create]), seed];
}

describe('the operator commands in the sluice program', () => {
  it('run by their words, with their options parsed by commander; exit code 0', async () => {
    // Prepare
    const calls: unknown[][] = [];
    // Act
    const result = await sluice(['keys', 'create', '--workspace', 'ws_1', '--json'], () =>
      operatorCommands(calls),
    );
    // Assess
    expect(result.code).toBe(0);
    expect(calls).toEqual([['keys create', { workspace: 'ws_1', json: true }]]);
    expect(result.err).toEqual([]);
  });

  it('print a usage error, an unknown command or option the one way, exit code 2; a failure exit code 1', async () => {
    // Act
    const missing = await sluice(['keys', 'create'], () => operatorCommands([]));
    const unknownCommand = await sluice(['keys', 'delete'], () => operatorCommands([]));
    const unknownOption = await sluice(['keys', 'create', '--bogus'], () => operatorCommands([]));
    const failed = await sluice(['seed'], () => operatorCommands([]));
    // Assess
    expect([missing.code, unknownCommand.code, unknownOption.code, failed.code]).toEqual([2, 2, 2, 1]);
    expect(missing.err).toEqual(['Error: --workspace <id> is required']);
    expect(unknownCommand.err.join('\n')).toContain("unknown command 'delete'");
    expect(unknownOption.err.join('\n')).toContain("unknown option '--bogus'");
    expect(failed.err).toEqual(['Error: database unreachable']);
  });

  it('are loaded only for an operator invocation', async () => {
    // Act
    const help = await sluice(['--help'], () => operatorCommands([]));
    const keysHelp = await sluice(['help', 'keys'], () => operatorCommands([]));
    // Assess: the groups are listed without being loaded
    expect(help.code).toBe(0);
    expect(help.loaded).toBe(false);
    expect(help.out.join('\n')).toMatch(/keys \[args\.\.\.\] +operator: API keys/);
    expect(keysHelp.loaded).toBe(true);
    expect(keysHelp.out.join('\n')).toContain('create [options]');
  });
});
