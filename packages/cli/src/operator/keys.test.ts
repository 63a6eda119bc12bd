import { randomUUID } from 'node:crypto';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import {
  API_KEY_SK,
  apiKeyPk,
  ControlStore,
  documentClient,
  generateApiKey,
  hashApiKey,
} from '@sluice/control';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../context.js';
import { runCommands } from './command.js';
import { createKeysCommands } from './keys.js';
import { controlTable } from '../../../../test/helpers/tables.js';

function keysCommand(name: string): { run: (args: string[]) => Promise<void>; lines: string[] } {
  const lines: string[] = [];
  const commands = createKeysCommands({ out: (line) => lines.push(line) });
  return { run: (args) => runCommands(commands, [...name.split(' '), ...args]), lines };
}

function keysCreate() {
  return keysCommand('keys create');
}

describe('keys create', () => {
  const store = new ControlStore(controlTable);

  it('is exported under its name', () => {
    const [keys] = createKeysCommands();
    expect(keys?.name()).toBe('keys');
    expect(keys?.commands.map((command) => command.name())).toEqual(['create', 'list', 'revoke', 'upgrade']);
  });

  it('with --json prints exactly {apiKey, keyId, workspaceId}, and the key authenticates for the workspace', async () => {
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
    expect(Object.keys(printed)).toEqual(['apiKey', 'keyId', 'workspaceId']);
    expect(printed.workspaceId).toBe(workspaceId);
    const record = await store.findApiKey(String(printed.apiKey));
    expect(record).toMatchObject({
      keyId: printed.keyId,
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
    [['--workspace', 'acme/email_events', '--role', 'admin'], '--workspace must be 1 to 128 letters'],
  ])('refuses %j with a clear usage error', async (args, message) => {
    const created: unknown[] = [];
    const commands = createKeysCommands({
      store: () => ({
        ensureWorkspace: async () => {
          created.push('workspace');
          return { id: 'x', name: 'x', createdAt: '', uid: 'u' };
        },
        createApiKey: async () => {
          throw new Error('must not be called');
        },
        listApiKeys: async () => {
          throw new Error('must not be called');
        },
        revokeApiKey: async () => {
          throw new Error('must not be called');
        },
        upgradeKeysWithoutId: async () => {
          throw new Error('must not be called');
        },
      }),
      out: () => {},
    });

    const failure = await runCommands(commands, ['keys', 'create', ...args]).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(UsageError);
    expect((failure as Error).message).toContain(message);
    expect(created).toEqual([]);
  });
});

describe('keys list and keys revoke', () => {
  const store = new ControlStore(controlTable);

  async function createKey(workspaceId: string, role: string): Promise<{ apiKey: string; keyId: string }> {
    const { run, lines } = keysCreate();
    await run(['--workspace', workspaceId, '--role', role, '--json']);
    return JSON.parse(lines[0] ?? '') as { apiKey: string; keyId: string };
  }

  it('lists each key with its id, role, scopes and dates, never the key', async () => {
    // Prepare
    const workspaceId = `ws_${randomUUID()}`;
    const owner = await createKey(workspaceId, 'owner');
    const member = await createKey(workspaceId, 'member');
    const list = keysCommand('keys list');
    const json = keysCommand('keys list');

    // Act
    await list.run(['--workspace', workspaceId]);
    await json.run(['--workspace', workspaceId, '--json']);

    // Assess
    const printed = JSON.parse(json.lines[0] ?? '') as {
      workspaceId: string;
      keys: Record<string, unknown>[];
    };
    expect(printed.workspaceId).toBe(workspaceId);
    expect(printed.keys.map((key) => [key.keyId, key.role])).toEqual(
      expect.arrayContaining([
        [owner.keyId, 'owner'],
        [member.keyId, 'member'],
      ]),
    );
    expect(Object.keys(printed.keys[0] ?? {}).sort()).toEqual(
      ['createdAt', 'keyId', 'keyPrefix', 'role', 'scopes', 'workspaceId'].sort(),
    );
    expect(list.lines).toHaveLength(2);
    expect(list.lines.find((line) => line.startsWith(owner.keyId))).toMatch(
      /owner .*active .*last used never/,
    );
    const everything = [...list.lines, ...json.lines].join('\n');
    for (const { apiKey } of [owner, member]) {
      expect(everything).not.toContain(apiKey);
      expect(everything).not.toContain(apiKey.slice(8));
    }
  });

  it('revokes a key by its id: it authenticates no more and is listed as revoked', async () => {
    // Prepare
    const workspaceId = `ws_${randomUUID()}`;
    const { apiKey, keyId } = await createKey(workspaceId, 'admin');
    const revoke = keysCommand('keys revoke');
    const list = keysCommand('keys list');

    // Act
    await revoke.run(['--workspace', workspaceId, keyId]);
    await list.run(['--workspace', workspaceId]);

    // Assess
    expect(revoke.lines[0]).toContain(`Revoked ${keyId} (admin)`);
    expect(await store.findApiKey(apiKey)).toBeUndefined();
    expect(list.lines[0]).toMatch(new RegExp(`^${keyId} .*revoked 20`));
  });

  it('fails for a key of another workspace, and refuses a malformed id as a usage error', async () => {
    // Prepare
    const { keyId } = await createKey(`ws_${randomUUID()}`, 'owner');
    const revoke = keysCommand('keys revoke');

    // Act
    const otherWorkspace = await revoke
      .run(['--workspace', `ws_${randomUUID()}`, keyId])
      .catch((e: unknown) => e);
    const malformed = await revoke.run(['--workspace', 'ws_x', 'slk_notanid']).catch((e: unknown) => e);
    const missing = await revoke.run(['--workspace', 'ws_x']).catch((e: unknown) => e);

    // Assess
    expect((otherWorkspace as Error).message).toContain(`has no API key ${keyId}`);
    expect(otherWorkspace).not.toBeInstanceOf(UsageError);
    expect(malformed).toBeInstanceOf(UsageError);
    expect(missing).toBeInstanceOf(UsageError);
  });
});

describe('keys upgrade', () => {
  const store = new ControlStore(controlTable);

  it('gives a key created before key ids its id: refused before, authenticating and listed after, once', async () => {
    // Prepare: a key item as versions without public ids wrote it (no keyId, no workspace pointer)
    const workspaceId = `ws_${randomUUID()}`;
    const apiKey = generateApiKey();
    const client = documentClient;
    await client.send(
      new PutCommand({
        TableName: process.env.SLUICE_CONTROL_TABLE,
        Item: {
          PK: apiKeyPk(hashApiKey(apiKey)),
          SK: API_KEY_SK,
          workspaceId,
          role: 'admin',
          scopes: ['data_exports:read'],
          keyPrefix: apiKey.slice(0, 8),
          createdAt: '2026-01-02T03:04:05.000Z',
        },
      }),
    );
    const before = await store.findApiKey(apiKey);
    const upgrade = keysCommand('keys upgrade');
    const again = keysCommand('keys upgrade');
    const list = keysCommand('keys list');

    // Act
    await upgrade.run([]);
    await again.run([]);
    await list.run(['--workspace', workspaceId]);

    // Assess
    expect(before).toBeUndefined();
    const after = await store.findApiKey(apiKey);
    expect(after).toMatchObject({ workspaceId, role: 'admin', scopes: ['data_exports:read'] });
    expect(after?.keyId).toMatch(/^key_[0-9a-f]{24}$/);
    expect(upgrade.lines[0]).toMatch(/^Gave [1-9]\d* API key\(s\)/);
    expect(again.lines[0]).toBe('Every API key already has a key id.');
    expect(list.lines).toHaveLength(1);
    expect(list.lines[0]).toMatch(new RegExp(`^${after?.keyId} +admin .*created 2026-01-02T03:04:05.000Z`));
  });
});
