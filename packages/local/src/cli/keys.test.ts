import { randomUUID } from 'node:crypto';
import { ControlStore } from '@sluice/control';
import { describe, expect, it } from 'vitest';
import { CliUsageError } from './command.js';
import { commands, createKeysCommands } from './keys.js';
import { controlTable } from '../../../../test/helpers/tables.js';

function keysCreate(): { run: (args: string[]) => Promise<void>; lines: string[] } {
  const lines: string[] = [];
  const [command] = createKeysCommands({ out: (line) => lines.push(line) });
  if (!command) throw new Error('no command');
  return { run: (args) => command.run(args), lines };
}

describe('keys create', () => {
  const store = new ControlStore(controlTable);

  it('is exported under its name', () => {
    expect(commands.map((command) => command.name)).toEqual(['keys create']);
  });

  it('with --json prints exactly {apiKey, workspaceId}, and the key authenticates for the workspace', async () => {
    const workspaceId = `ws_${randomUUID()}`;
    const { run, lines } = keysCreate();

    await run([
      '--workspace',
      workspaceId,
      '--role',
      'admin',
      '--scopes',
      'data_exports:read, analytics:read',
      '--json',
    ]);

    expect(lines).toHaveLength(1);
    const printed = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
    expect(Object.keys(printed)).toEqual(['apiKey', 'workspaceId']);
    expect(printed.workspaceId).toBe(workspaceId);
    const record = await store.findApiKey(String(printed.apiKey));
    expect(record).toMatchObject({
      workspaceId,
      role: 'admin',
      scopes: ['data_exports:read', 'analytics:read'],
    });
    expect(await store.getWorkspace(workspaceId)).toMatchObject({ id: workspaceId });
  });

  it('prints the key for a person, with every scope by default', async () => {
    const workspaceId = `ws_${randomUUID()}`;
    const { run, lines } = keysCreate();

    await run(['--workspace', workspaceId, '--role', 'owner']);

    const key = lines.map((line) => line.trim()).find((line) => line.startsWith('slk_'));
    expect(key).toBeDefined();
    expect((await store.findApiKey(key ?? ''))?.scopes).toHaveLength(5);
  });

  it.each([
    [['--role', 'owner'], '--workspace <id> is required'],
    [['--workspace', 'ws_x'], '--role is required'],
    [['--workspace', 'ws_x', '--role', 'root'], 'Unknown role "root". Allowed: owner, admin, member'],
    [
      ['--workspace', 'ws_x', '--role', 'admin', '--scopes', 'data_exports:read,everything'],
      'Unknown scope(s): everything',
    ],
    [['--workspace', 'ws_x', '--role', 'admin', '--scopes', ','], '--scopes needs at least one of'],
    [['--workspace', 'a#b', '--role', 'admin'], '--workspace must be'],
  ])('refuses %j with a clear usage error', async (args, message) => {
    const created: unknown[] = [];
    const [command] = createKeysCommands({
      store: () => ({
        ensureWorkspace: async () => {
          created.push('workspace');
          return { id: 'x', name: 'x', createdAt: '' };
        },
        createApiKey: async () => {
          throw new Error('must not be called');
        },
      }),
      out: () => {},
    });

    const failure = await command?.run(args).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(CliUsageError);
    expect((failure as Error).message).toContain(message);
    expect(created).toEqual([]);
  });
});
