import { randomUUID } from 'node:crypto';
import { DeleteCommand, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { ApiKeyMeter } from './api-key-meter.js';
import { generateApiKey, hashApiKey } from './api-keys.js';
import { documentClient } from './client.js';
import { countingDocumentClient } from './counting-client.test-support.js';
import { ControlStore } from './destinations.js';
import { API_KEY_SK, apiKeyPk } from './items.js';
import { controlTable } from '../../../test/helpers/tables.js';

const { tableName } = controlTable;
const store = new ControlStore(controlTable);
const limit = { ratePerSecond: 10, burst: 3 };

/** A clock the test moves by hand. */
function manualClock(start = Date.parse('2026-12-03T12:00:00.000Z')) {
  let nowMs = start;
  return { now: () => new Date(nowMs), advance: (ms: number) => (nowMs += ms) };
}

async function newKey(role: 'owner' | 'admin' = 'owner') {
  const workspaceId = `ws_${randomUUID()}`;
  return store.createApiKey({ workspaceId, role });
}

describe('ApiKeyMeter against DynamoDB Local', () => {
  it('allows the burst, then answers limited with the wait, then allows again one interval later', async () => {
    // Prepare
    const { apiKey, record } = await newKey();
    const clock = manualClock();
    const meter = new ApiKeyMeter({ tableName, limit, now: clock.now });

    // Act
    const burst = [];
    for (let i = 0; i < 4; i++) burst.push(await meter.use(apiKey));
    clock.advance(100);
    const later = await meter.use(apiKey);

    // Assess
    expect(burst.map((use) => use.outcome)).toEqual(['allowed', 'allowed', 'allowed', 'limited']);
    expect(burst[3]).toEqual({ outcome: 'limited', retryAfterSeconds: 1 });
    expect(later).toMatchObject({ outcome: 'allowed', record: { keyId: record.keyId } });
    expect((await store.listApiKeys(record.workspaceId))[0]?.lastUsedAt).toBe(clock.now().toISOString());
  });

  it('refuses a caller over its limit without any database call', async () => {
    // Prepare
    const { apiKey } = await newKey();
    const clock = manualClock();
    const { client, calls } = countingDocumentClient();
    const meter = new ApiKeyMeter({ client, tableName, limit, now: clock.now });
    for (let i = 0; i < 4; i++) await meter.use(apiKey);
    const before = calls();

    // Act
    const refused = [];
    for (let i = 0; i < 50; i++) refused.push((await meter.use(apiKey)).outcome);

    // Assess
    expect(refused.every((outcome) => outcome === 'limited')).toBe(true);
    expect(calls()).toBe(before);
  });

  it('shares one limit between instances: a fresh instance learns the state from one failed write', async () => {
    // Prepare
    const { apiKey } = await newKey();
    const clock = manualClock();
    const first = new ApiKeyMeter({ tableName, limit, now: clock.now });
    for (let i = 0; i < 3; i++) await first.use(apiKey);
    const { client, calls } = countingDocumentClient();
    const second = new ApiKeyMeter({ client, tableName, limit, now: clock.now });

    // Act
    const outcome = await second.use(apiKey);
    const next = await second.use(apiKey);

    // Assess
    expect(outcome).toEqual({ outcome: 'limited', retryAfterSeconds: 1 });
    expect(next.outcome).toBe('limited');
    expect(calls()).toBe(1);
  });

  it('never allows more than the burst when many requests race on one key', async () => {
    // Prepare
    const { apiKey } = await newKey();
    const clock = manualClock();
    const meters = Array.from({ length: 6 }, () => new ApiKeyMeter({ tableName, limit, now: clock.now }));

    // Act
    const uses = await Promise.all(meters.flatMap((meter) => [meter.use(apiKey), meter.use(apiKey)]));

    // Assess
    expect(uses.filter((use) => use.outcome === 'allowed')).toHaveLength(limit.burst);
  });

  it('refuses a revoked key on the next request, whatever an authorizer cache still holds', async () => {
    // Prepare
    const { apiKey, record } = await newKey();
    const meter = new ApiKeyMeter({ tableName, limit });
    expect((await meter.use(apiKey)).outcome).toBe('allowed');

    // Act
    await store.revokeApiKey(record.workspaceId, record.keyId);
    const after = await meter.use(apiKey);

    // Assess
    expect(after).toEqual({ outcome: 'unknown' });
  });

  it('refuses a deleted key, and returns the stored scopes of a narrowed one', async () => {
    // Prepare
    const deleted = await newKey();
    const narrowed = await newKey('admin');
    const meter = new ApiKeyMeter({ tableName, limit });
    await meter.use(deleted.apiKey);
    await meter.use(narrowed.apiKey);

    // Act
    await documentClient.send(
      new DeleteCommand({
        TableName: tableName,
        Key: { PK: apiKeyPk(deleted.record.keyHash), SK: API_KEY_SK },
      }),
    );
    await documentClient.send(
      new UpdateCommand({
        TableName: tableName,
        Key: { PK: apiKeyPk(narrowed.record.keyHash), SK: API_KEY_SK },
        UpdateExpression: 'SET scopes = :scopes',
        ExpressionAttributeValues: { ':scopes': ['data_exports:read'] },
      }),
    );

    // Assess
    expect(await meter.use(deleted.apiKey)).toEqual({ outcome: 'unknown' });
    expect(await meter.use(narrowed.apiKey)).toMatchObject({
      outcome: 'allowed',
      record: { role: 'admin', scopes: ['data_exports:read'] },
    });
  });

  it('refuses malformed and never-issued keys, the malformed ones without any database call', async () => {
    // Prepare
    const { client, calls } = countingDocumentClient();
    const meter = new ApiKeyMeter({ client, tableName, limit });

    // Act
    const malformed = await Promise.all(
      ['', 'slk_short', `${generateApiKey().slice(0, -1)}!`].map((key) => meter.use(key)),
    );
    const callsForMalformed = calls();
    const neverIssued = await meter.use(generateApiKey());

    // Assess
    expect(malformed.every((use) => use.outcome === 'unknown')).toBe(true);
    expect(callsForMalformed).toBe(0);
    expect(neverIssued).toEqual({ outcome: 'unknown' });
  });

  it('creates no item for a never-issued key', async () => {
    // Prepare
    const apiKey = generateApiKey();

    // Act
    await new ApiKeyMeter({ tableName, limit }).use(apiKey);
    const item = await documentClient.send(
      new GetCommand({ TableName: tableName, Key: { PK: apiKeyPk(hashApiKey(apiKey)), SK: API_KEY_SK } }),
    );

    // Assess
    expect(item.Item).toBeUndefined();
  });
});
