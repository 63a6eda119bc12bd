import { randomUUID } from 'node:crypto';
import { DeleteCommand, GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { InvalidInputError, WORKSPACE_ID_RULE } from '@sluice/core';
import { describe, expect, it, vi } from 'vitest';
import {
  API_KEY_SCOPES,
  ApiKeyStore,
  apiKeyChecksum,
  crc32,
  generateApiKey,
  hashApiKey,
  parseApiKey,
  type ApiKeyScope,
  type ApiKeyRole,
} from './api-keys.js';
import { documentClient } from './client.js';
import { ControlStore } from './destinations.js';
import { apiKeyPk } from './items.js';
import { controlTable } from '../../../test/helpers/tables.js';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const tableName = process.env.SLUICE_CONTROL_TABLE as string;

/** A client that fails the test if any database call is made. */
function forbiddenClient(): { client: DynamoDBDocumentClient; send: ReturnType<typeof vi.fn> } {
  const send = vi.fn(() => {
    throw new Error('no database read expected');
  });
  return { client: { send } as unknown as DynamoDBDocumentClient, send };
}

describe('API key format', () => {
  it('generates slk_ + 32 base62 + 6-character checksum keys that parse', () => {
    const key = generateApiKey();

    expect(key).toMatch(/^slk_[0-9A-Za-z]{38}$/);
    expect(parseApiKey(key)).toEqual({ ok: true, apiKey: key });
    expect(key.slice(-6)).toBe(apiKeyChecksum(key.slice(0, -6)));
  });

  it('computes the standard CRC-32', () => {
    expect(crc32('123456789')).toBe(0xcbf43926);
  });

  it('refuses every one-character typo before any database read', async () => {
    const key = generateApiKey();
    const { client, send } = forbiddenClient();
    const store = new ApiKeyStore({ client, tableName: 'unused' });
    const typos: string[] = [];
    for (let i = 4; i < key.length; i++) {
      const replacement = BASE62[(BASE62.indexOf(key.charAt(i)) + 1 + (i % 61)) % 62] as string;
      typos.push(key.slice(0, i) + replacement + key.slice(i + 1));
    }

    const parsed = typos.map((typo) => parseApiKey(typo));
    const found = await Promise.all(typos.map((typo) => store.findApiKey(typo)));

    expect(parsed.every((result) => !result.ok && result.reason === 'checksum')).toBe(true);
    expect(found.every((record) => record === undefined)).toBe(true);
    expect(send).not.toHaveBeenCalled();
  });

  it.each([
    ['', 'missing'],
    ['Bearer slk_abc', 'prefix'],
    ['slk_short', 'length'],
    [`slk_${'-'.repeat(38)}`, 'characters'],
  ])('refuses %j as %s', async (candidate, reason) => {
    const { client, send } = forbiddenClient();

    expect(parseApiKey(candidate)).toEqual({ ok: false, reason });
    expect(await new ApiKeyStore({ client, tableName: 'unused' }).findApiKey(candidate)).toBeUndefined();
    expect(send).not.toHaveBeenCalled();
  });
});

describe('ApiKeyStore against DynamoDB Local', () => {
  const store = new ControlStore(controlTable);

  it('creates a key with every scope by default and finds it by its hash', async () => {
    const workspaceId = `ws_${randomUUID()}`;

    const { apiKey, record } = await store.createApiKey({ workspaceId, role: 'owner' });
    const found = await store.findApiKey(apiKey);

    expect(record.scopes).toEqual([...API_KEY_SCOPES]);
    expect(record.keyId).toMatch(/^key_[0-9a-f]{24}$/);
    expect(found).toEqual({ ...record, keyHash: hashApiKey(apiKey) });
    expect(found?.keyPrefix).toBe(apiKey.slice(0, 8));
  });

  it('stores only the SHA-256 of the key', async () => {
    const { apiKey, record } = await store.createApiKey({
      workspaceId: `ws_${randomUUID()}`,
      role: 'member',
      scopes: ['data_exports:read'],
    });

    const item = (
      await documentClient.send(
        new GetCommand({ TableName: tableName, Key: { PK: apiKeyPk(record.keyHash), SK: 'KEY' } }),
      )
    ).Item;

    expect(item).toMatchObject({
      role: 'member',
      scopes: ['data_exports:read'],
      keyPrefix: apiKey.slice(0, 8),
    });
    expect(JSON.stringify(item)).not.toContain(apiKey.slice(8));
  });

  it('finds nothing for a well-formed key that was never issued', async () => {
    expect(await store.findApiKey(generateApiKey())).toBeUndefined();
  });

  it('refuses an unknown role or scope with a clear error', async () => {
    const workspaceId = `ws_${randomUUID()}`;

    await expect(store.createApiKey({ workspaceId, role: 'root' as ApiKeyRole })).rejects.toBeInstanceOf(
      InvalidInputError,
    );
    await expect(
      store.createApiKey({ workspaceId, role: 'admin', scopes: ['everything' as ApiKeyScope] }),
    ).rejects.toThrow('Unknown scopes: everything');
  });
});

describe('listing and revoking keys against DynamoDB Local', () => {
  const store = new ControlStore(controlTable);

  it("lists a workspace's keys oldest first with id, role, scopes and dates, never the key or its hash", async () => {
    // Prepare
    const workspaceId = `ws_${randomUUID()}`;
    const first = await store.createApiKey({
      workspaceId,
      role: 'owner',
      now: new Date('2026-12-01T10:00:00.000Z'),
    });
    const second = await store.createApiKey({
      workspaceId,
      role: 'member',
      scopes: ['data_exports:read'],
      now: new Date('2026-12-02T10:00:00.000Z'),
    });
    await store.createApiKey({ workspaceId: `ws_${randomUUID()}`, role: 'owner' });

    // Act
    const listed = await store.listApiKeys(workspaceId);

    // Assess
    expect(listed).toEqual([
      {
        keyId: first.record.keyId,
        workspaceId,
        role: 'owner',
        scopes: [...API_KEY_SCOPES],
        keyPrefix: first.apiKey.slice(0, 8),
        createdAt: '2026-12-01T10:00:00.000Z',
      },
      {
        keyId: second.record.keyId,
        workspaceId,
        role: 'member',
        scopes: ['data_exports:read'],
        keyPrefix: second.apiKey.slice(0, 8),
        createdAt: '2026-12-02T10:00:00.000Z',
      },
    ]);
    const text = JSON.stringify(listed);
    for (const { apiKey, record } of [first, second]) {
      expect(text).not.toContain(apiKey.slice(8));
      expect(text).not.toContain(record.keyHash);
    }
  });

  it('revokes a key by its public id: it is found no more, and stays listed as revoked', async () => {
    // Prepare
    const workspaceId = `ws_${randomUUID()}`;
    const { apiKey, record } = await store.createApiKey({ workspaceId, role: 'admin' });
    const revokedAt = new Date('2026-12-03T09:00:00.000Z');

    // Act
    const revoked = await store.revokeApiKey(workspaceId, record.keyId, revokedAt);
    const again = await store.revokeApiKey(workspaceId, record.keyId, new Date('2026-12-04T09:00:00.000Z'));

    // Assess
    expect(revoked).toMatchObject({ keyId: record.keyId, revokedAt: revokedAt.toISOString() });
    expect(again?.revokedAt).toBe(revokedAt.toISOString());
    expect(await store.findApiKey(apiKey)).toBeUndefined();
    expect((await store.listApiKeys(workspaceId)).map((key) => key.revokedAt)).toEqual([
      revokedAt.toISOString(),
    ]);
  });

  it('revokes nothing in another workspace, nor an unknown or malformed id', async () => {
    // Prepare
    const workspaceId = `ws_${randomUUID()}`;
    const { apiKey, record } = await store.createApiKey({ workspaceId, role: 'owner' });

    // Act
    const results = await Promise.all([
      store.revokeApiKey(`ws_${randomUUID()}`, record.keyId),
      store.revokeApiKey(workspaceId, 'key_000000000000000000000000'),
      store.revokeApiKey(workspaceId, 'key_#'),
    ]);

    // Assess
    expect(results).toEqual([undefined, undefined, undefined]);
    expect(await store.findApiKey(apiKey)).toMatchObject({ keyId: record.keyId });
  });
});

describe('workspaces', () => {
  const store = new ControlStore(controlTable);

  it('ensureWorkspace is idempotent and keeps the first name and createdAt', async () => {
    const workspaceId = `ws_${randomUUID()}`;

    const first = await store.ensureWorkspace(workspaceId, 'Acme', new Date('2026-01-01T00:00:00.000Z'));
    const second = await store.ensureWorkspace(workspaceId, 'Other', new Date('2026-02-01T00:00:00.000Z'));

    expect(first).toEqual({
      id: workspaceId,
      name: 'Acme',
      createdAt: '2026-01-01T00:00:00.000Z',
      uid: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
    expect(second).toEqual(first);
    expect(await store.getWorkspace(workspaceId)).toEqual(first);
    expect(await store.getWorkspace(`ws_${randomUUID()}`)).toBeUndefined();
  });

  it('gives a workspace id made again after its item was deleted a new uid, never the old one', async () => {
    // Prepare
    const workspaceId = `ws_${randomUUID()}`;
    const first = await store.ensureWorkspace(workspaceId, 'Acme');
    await documentClient.send(
      new DeleteCommand({
        TableName: controlTable.tableName,
        Key: { PK: `WS#${workspaceId}`, SK: 'WORKSPACE' },
      }),
    );
    // Act
    const again = await store.ensureWorkspace(workspaceId, 'Acme');
    // Assess
    expect(again.uid).toMatch(/^[0-9a-f]{32}$/);
    expect(again.uid).not.toBe(first.uid);
  });

  it('refuses a workspace id with a key separator', async () => {
    await expect(store.ensureWorkspace('a#b')).rejects.toBeInstanceOf(InvalidInputError);
  });

  it.each(['acme/email_events', 'a\\b', '..', '.hidden', 'a b', 'x'.repeat(129)])(
    'refuses a workspace id %j that would name other folders of the event archive, at creation',
    async (workspaceId) => {
      await expect(store.ensureWorkspace(workspaceId)).rejects.toMatchObject({
        message: expect.stringMatching(/^Workspace id is not valid: 1 to 128 letters/),
        issues: [{ path: 'workspaceId', message: WORKSPACE_ID_RULE }],
      });
      await expect(store.ensureWorkspace(workspaceId)).rejects.toBeInstanceOf(InvalidInputError);
      await expect(store.createApiKey({ workspaceId, role: 'owner' })).rejects.toBeInstanceOf(
        InvalidInputError,
      );
      expect(await store.getWorkspace(workspaceId)).toBeUndefined();
    },
  );
});
