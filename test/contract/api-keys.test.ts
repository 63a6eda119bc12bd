import { randomBytes } from 'node:crypto';
import { DeleteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createApiHandler } from '@sluice/api';
import {
  API_KEY_SK,
  ApiKeyMeter,
  apiKeyPk,
  ControlStore,
  documentClient,
  generateApiKey,
  hashApiKey,
} from '@sluice/control';
import { SecretSealer } from '@sluice/secrets';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuthorizer } from '../../functions/authorizer/authorize.js';
import { countingDocumentClient } from '../../packages/control/src/counting-client.test-support.js';
import type { ApiFunction, AuthorizerFunction } from '@sluice/local';
import {
  type ContractHarness,
  startContractHarness,
  type TestWorkspace,
} from '../helpers/contract-harness.js';
import { kmsKey } from '../helpers/tables.js';

const tableName = process.env.SLUICE_CONTROL_TABLE as string;
const LIMIT = { ratePerSecond: 1, burst: 3 };
const UNKNOWN_ID = 'exp_000000000000000000000000';

/** Every DynamoDB call the authorizer and the API make goes through here, so the test can count them. */
const counted = countingDocumentClient();

/** API Gateway's authorizer cache at its worst: every verdict kept for the whole suite. */
const verdicts = new Map<string, ReturnType<AuthorizerFunction>>();
let authorizerCalls = 0;

let harness: ContractHarness;
let ws: TestWorkspace;

beforeAll(async () => {
  const store = new ControlStore({ client: counted.client, tableName });
  const authorize = createAuthorizer(store);
  const cachingAuthorizer: AuthorizerFunction = (event) => {
    const identity = event.identitySource?.[0] ?? '';
    if (!verdicts.has(identity)) {
      authorizerCalls++;
      verdicts.set(identity, authorize(event));
    }
    return verdicts.get(identity)!;
  };
  // A frozen clock: the limit is met by request count alone, however slow the machine.
  const frozen = new Date('2026-12-03T12:00:00.000Z');
  const api = createApiHandler({
    store,
    sealer: new SecretSealer(kmsKey),
    keyMeter: new ApiKeyMeter({ client: counted.client, tableName, limit: LIMIT, now: () => frozen }),
  }) as unknown as ApiFunction;
  harness = await startContractHarness({ handlers: { authorizer: cachingAuthorizer, api } });
  ws = await harness.newWorkspace();
});

afterAll(async () => {
  expect(await harness.closeAndFindLeaks()).toEqual([]);
});

describe('per-key rate limit', () => {
  it('answers 429 rate_limited with Retry-After past the burst, for that key only', async () => {
    // Prepare
    const busy = await ws.clientWith({});
    const other = await ws.clientWith({});

    // Act
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT.burst; i++) statuses.push((await busy.get('/data-exports')).status);
    const refused = await busy.get('/data-exports');
    const otherKey = await other.get('/data-exports');

    // Assess
    expect(statuses).toEqual([200, 200, 200]);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.body).toEqual({
      success: false,
      error: 'Too many requests with this API key. Retry after 1 s.',
      code: 'rate_limited',
      retryable: true,
    });
    expect(otherKey.status).toBe(200);
  });
});

describe('a key changed while the gateway still caches its verdict', () => {
  it('is refused with 401 once revoked, without asking the authorizer again', async () => {
    // Prepare
    const client = await ws.clientWith({});
    expect((await client.get('/data-exports')).status).toBe(200);
    const [key] = (await harness.store.listApiKeys(ws.workspaceId)).filter(
      (listed) => listed.keyPrefix === client.apiKey?.slice(0, 8),
    );
    const callsBefore = authorizerCalls;

    // Act
    await harness.store.revokeApiKey(ws.workspaceId, key!.keyId);
    const after = await client.get('/data-exports');

    // Assess
    expect(authorizerCalls).toBe(callsBefore);
    expect(after.status).toBe(401);
    expect(after.body).toMatchObject({ success: false, code: 'unauthorized' });
  });

  it('is refused with 401 once its item is deleted', async () => {
    // Prepare
    const client = await ws.clientWith({});
    expect((await client.get('/data-exports')).status).toBe(200);

    // Act
    await documentClient.send(
      new DeleteCommand({
        TableName: tableName,
        Key: { PK: apiKeyPk(hashApiKey(client.apiKey!)), SK: API_KEY_SK },
      }),
    );

    // Assess
    expect((await client.get('/data-exports')).status).toBe(401);
  });

  it('has only its new scopes once narrowed', async () => {
    // Prepare
    const client = await ws.clientWith({ role: 'admin' });
    expect((await client.delete(`/data-exports/${UNKNOWN_ID}`)).status).toBe(404);

    // Act
    await documentClient.send(
      new UpdateCommand({
        TableName: tableName,
        Key: { PK: apiKeyPk(hashApiKey(client.apiKey!)), SK: API_KEY_SK },
        UpdateExpression: 'SET scopes = :scopes',
        ExpressionAttributeValues: { ':scopes': ['data_exports:read'] },
      }),
    );
    const deleted = await client.delete(`/data-exports/${UNKNOWN_ID}`);

    // Assess
    expect(deleted.status).toBe(403);
    expect(deleted.body.error).toBe('API key is missing required scopes: data_exports:delete');
    expect((await client.get('/data-exports')).status).toBe(200);
  });
});

describe('Authorization values that cannot be a Sluice key', () => {
  it('are refused with 401 without any database call', async () => {
    // Prepare
    const almost = generateApiKey();
    const values = [
      `Bearer ${randomBytes(24).toString('base64url')}`,
      `Bearer slk_${randomBytes(19).toString('hex')}`,
      `Bearer ${almost.slice(0, -1)}${almost.endsWith('0') ? '1' : '0'}`,
      `Basic ${Buffer.from('user:pass').toString('base64')}`,
      'Bearer',
      randomBytes(64).toString('hex'),
    ];
    const before = counted.calls();

    // Act
    const statuses = [];
    for (const value of values) {
      statuses.push(
        (await harness.anonymous().get('/data-exports', { headers: { authorization: value } })).status,
      );
    }

    // Assess
    expect(statuses).toEqual(values.map(() => 401));
    expect(counted.calls()).toBe(before);
  });
});
