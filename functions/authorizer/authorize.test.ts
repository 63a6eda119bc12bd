import { Logger } from '@aws-lambda-powertools/logger';
import type { ApiKeyRecord } from '@sluice/control';
import { generateApiKey } from '@sluice/control';
import { DatabaseUnavailableError } from '@sluice/core';
import { describe, expect, it, vi } from 'vitest';
import { createAuthorizer } from './authorize.js';

const record: ApiKeyRecord = {
  keyId: 'key_0123456789abcdef01234567',
  keyHash: 'h',
  workspaceId: 'ws_1',
  role: 'admin',
  scopes: ['data_exports:read', 'analytics:read'],
  keyPrefix: 'slk_abcd',
  createdAt: '2026-01-01T00:00:00.000Z',
};

function setup(find: (key: string) => Promise<ApiKeyRecord | undefined>) {
  const lines: string[] = [];
  const log = new Logger({ serviceName: 'test' });
  for (const level of ['info', 'warn', 'error'] as const) {
    vi.spyOn(log, level).mockImplementation((...args: unknown[]) => {
      lines.push(JSON.stringify(args));
    });
  }
  const finder = { findApiKey: vi.fn(find) };
  return { authorize: createAuthorizer(finder, log), finder, lines };
}

describe('createAuthorizer', () => {
  it('authorizes a known key with its workspace, role and scopes', async () => {
    const key = generateApiKey();
    const { authorize, lines } = setup(async () => record);
    const result = await authorize({ identitySource: [`Bearer ${key}`] });
    expect(result).toEqual({
      isAuthorized: true,
      context: {
        keyId: 'key_0123456789abcdef01234567',
        workspaceId: 'ws_1',
        role: 'admin',
        scopes: 'data_exports:read,analytics:read',
      },
    });
    expect(lines.join('\n')).not.toContain(key);
  });

  it('checks the format and checksum before any read', async () => {
    const key = generateApiKey();
    const typo = `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`;
    const { authorize, finder, lines } = setup(async () => record);
    for (const header of [`Bearer ${typo}`, 'Bearer slk_short', `Token ${key}`]) {
      expect(await authorize({ identitySource: [header] })).toEqual({
        isAuthorized: true,
        context: { authError: 'invalid_api_key' },
      });
    }
    expect(finder.findApiKey).not.toHaveBeenCalled();
    expect(lines.join('\n')).not.toContain(typo);
  });

  it('reports a missing key', async () => {
    const { authorize } = setup(async () => record);
    expect((await authorize({ identitySource: [] })).context).toEqual({ authError: 'missing_api_key' });
    expect((await authorize({ headers: { Authorization: '' } })).context).toEqual({
      authError: 'missing_api_key',
    });
  });

  it('reports an unknown key as invalid and an unreachable store as unavailable', async () => {
    const key = generateApiKey();
    expect(
      (await setup(async () => undefined).authorize({ identitySource: [`Bearer ${key}`] })).context,
    ).toEqual({
      authError: 'invalid_api_key',
    });
    const down = setup(async () => {
      throw new DatabaseUnavailableError();
    });
    expect((await down.authorize({ identitySource: [`Bearer ${key}`] })).context).toEqual({
      authError: 'unavailable',
    });
  });
});
