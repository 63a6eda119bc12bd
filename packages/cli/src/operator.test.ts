import { parseArgs } from 'node:util';
import { describe, expect, it } from 'vitest';
import { findCommand, runCli } from './operator.js';
import { type CliCommand, CliUsageError } from './operator/command.js';

function recorder() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (line: string) => out.push(line), err: (line: string) => err.push(line) }, out, err };
}

const calls: string[][] = [];
const commands: CliCommand[] = [
  {
    name: 'keys create',
    usage: 'keys create --workspace <id> --role <role>',
    async run(args) {
      const { values } = parseArgs({
        args,
        options: { workspace: { type: 'string' }, role: { type: 'string' } },
      });
      if (!values.workspace) throw new CliUsageError('--workspace is required');
      calls.push(['keys create', ...args]);
    },
  },
  {
    name: 'seed',
    usage: 'seed',
    async run() {
      throw new Error('database unreachable');
    },
  },
];

describe('the CLI dispatcher', () => {
  it('runs the command named by the first words, with the rest as its arguments', async () => {
    // Prepare
    const { io } = recorder();
    let prepared = false;
    // Act
    const code = await runCli(
      ['keys', 'create', '--workspace', 'ws_1', '--role', 'owner'],
      commands,
      io,
      () => {
        prepared = true;
      },
    );
    // Assess
    expect(code).toBe(0);
    expect(prepared).toBe(true);
    expect(calls.at(-1)).toEqual(['keys create', '--workspace', 'ws_1', '--role', 'owner']);
  });

  it('prints the usage and exits 2 for an unknown command, without preparing', async () => {
    // Prepare
    const { io, err } = recorder();
    let prepared = false;
    // Act
    const code = await runCli(['keys', 'delete'], commands, io, () => {
      prepared = true;
    });
    // Assess
    expect(code).toBe(2);
    expect(prepared).toBe(false);
    expect(err.join('\n')).toContain('Unknown command: keys delete');
    expect(err.join('\n')).toContain('keys create --workspace <id> --role <role>');
  });

  it('exits 2 with the command usage for a bad invocation, 1 for a failure', async () => {
    // Prepare
    const usage = recorder();
    const unknownOption = recorder();
    const failure = recorder();
    // Act
    const missing = await runCli(['keys', 'create'], commands, usage.io);
    const unknown = await runCli(['keys', 'create', '--bogus'], commands, unknownOption.io);
    const failed = await runCli(['seed'], commands, failure.io);
    // Assess
    expect(missing).toBe(2);
    expect(usage.err).toEqual([
      '--workspace is required',
      'Usage: npm run sluice -- keys create --workspace <id> --role <role>',
    ]);
    expect(unknown).toBe(2);
    expect(failed).toBe(1);
    expect(failure.err).toEqual(['Error: database unreachable']);
  });

  it('reports a configuration error only when a known command runs', async () => {
    // Prepare
    const { io, err } = recorder();
    // Act
    const code = await runCli(['keys', 'create', '--workspace', 'w'], commands, io, () => {
      throw new Error('No Sluice to talk to');
    });
    // Assess
    expect(code).toBe(1);
    expect(err).toEqual(['Error: No Sluice to talk to']);
  });

  it('prefers the longest matching name', () => {
    // Prepare
    const nested: CliCommand[] = [
      { name: 'events', usage: 'events', run: async () => {} },
      { name: 'events ingest', usage: 'events ingest', run: async () => {} },
    ];
    // Act
    const found = findCommand(['events', 'ingest', '--file', 'x'], nested);
    // Assess
    expect(found?.command.name).toBe('events ingest');
    expect(found?.args).toEqual(['--file', 'x']);
  });
});
