import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { createApiHandler, EXTERNAL_ID_KEY_CONTEXT } from '@sluice/api';
import { externalIdFor } from '@sluice/core';
import { SecretSealer } from '@sluice/secrets';
import { ROLE_UNAVAILABLE_MESSAGE, testConnection } from '@sluice/sinks';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ApiFunction } from '@sluice/local';
import { LOCAL_S3_CREDENTIALS } from '@sluice/devstack';
import { ApiClient } from '../helpers/api-client.js';
import {
  type ContractHarness,
  startContractHarness,
  type TestWorkspace,
} from '../helpers/contract-harness.js';
import { kmsKey, localBucketOrigins } from '../helpers/tables.js';

const ROLE_ARN = 'arn:aws:iam::111122223333:role/sluice-exports';
const OTHER_ROLE_ARN = 'arn:aws:iam::111122223333:role/path/sluice-exports-2';
const SESSION_TOKEN = 'contract-session-token-never-shown';
/** The account the API runs in, as the stack configures it. */
const OWN_ACCOUNT_ID = '444455556666';
const sts = mockClient(STSClient);
const KEYS = {
  Credentials: {
    AccessKeyId: LOCAL_S3_CREDENTIALS.accessKeyId,
    SecretAccessKey: LOCAL_S3_CREDENTIALS.secretAccessKey,
    SessionToken: SESSION_TOKEN,
    Expiration: new Date(Date.now() + 3_600_000),
  },
};
const accessDenied = () =>
  Object.assign(new Error('User is not authorized to perform: sts:AssumeRole'), {
    name: 'AccessDenied',
    $metadata: { httpStatusCode: 403 },
  });
/** The probe's random external ID (anything but the destination's). */
const isProbe = (externalId: string | undefined) => /^sluice-probe-/.test(externalId ?? '');
/**
 * STS as AWS answers once the trust policy allows Sluice with the condition on the external ID: the local
 * bucket's key as the temporary keys for the destination's external ID, AccessDenied for the probe's.
 */
const allow = () =>
  sts.on(AssumeRoleCommand).callsFake((input: { ExternalId?: string }) => {
    if (isProbe(input.ExternalId)) throw accessDenied();
    return KEYS;
  });
/** STS as AWS answers while the trust policy lacks Sluice or the external ID condition does not match. */
const deny = () => sts.on(AssumeRoleCommand).rejects(accessDenied());
/** STS as AWS answers when the trust policy admits Sluice's principal without any external ID condition. */
const trustWithoutCondition = () => sts.on(AssumeRoleCommand).resolves(KEYS);
/** The AssumeRole calls with the destination's external ID (the probes left out). */
const roleCalls = () =>
  sts
    .commandCalls(AssumeRoleCommand)
    .map((call) => call.args[0].input)
    .filter((input) => !isProbe(input.ExternalId));

let local: ContractHarness;
let onAws: ContractHarness;
let ws: TestWorkspace;
let client: ApiClient;

beforeAll(async () => {
  local = await startContractHarness();
  ws = await local.newWorkspace();
  // The real API with STS reachable (as in Lambda); the bucket named in the request is Amazon S3, served in
  // this test by the local bucket: the connection test's location gets the local endpoint, nothing else.
  const { handler: authorizer } = await import('../../functions/authorizer/handler.js');
  const api = createApiHandler({
    store: local.store,
    sealer: new SecretSealer(kmsKey),
    ownAccountId: OWN_ACCOUNT_ID,
    allowedEndpoints: localBucketOrigins,
    testConnection: (location, credentials, options) =>
      testConnection({ ...location, endpoint: local.s3Endpoint }, credentials, {
        ...options,
        allowedEndpoints: localBucketOrigins,
      }),
  }) as unknown as ApiFunction;
  onAws = await startContractHarness({ handlers: { authorizer, api } });
  onAws.secrets.add(SESSION_TOKEN);
  client = new ApiClient(onAws.url, ws.client.apiKey);
});

afterEach(() => {
  sts.reset();
});

afterAll(async () => {
  expect(await onAws.closeAndFindLeaks()).toEqual([]);
  expect(await local.closeAndFindLeaks()).toEqual([]);
});

/** A create body for an Amazon S3 bucket with a role. */
const roleBody = (roleArn = ROLE_ARN) =>
  local.createBody({
    accessKeyId: undefined,
    secretAccessKey: undefined,
    endpoint: undefined,
    region: 'eu-west-1',
    roleArn,
  });

describe('an export that assumes an IAM role', () => {
  it('is created with its externalId and without accessKeyId, and assumes the role with it', async () => {
    // Prepare
    allow();
    const body = roleBody();
    // Act
    const created = await client.post('/data-exports', body);
    // Assess: 201, the role and a Sluice-chosen external ID, no key
    expect(created.status).toBe(201);
    const view = created.body.dataExport!;
    expect(view.roleArn).toBe(ROLE_ARN);
    expect(view.externalId).toMatch(/^sluice-[0-9a-f]{32}$/);
    expect(view).not.toHaveProperty('accessKeyId');
    const [call] = roleCalls();
    expect(call).toMatchObject({
      RoleArn: ROLE_ARN,
      ExternalId: view.externalId,
      RoleSessionName: `sluice-${view.id}`,
    });
    expect(
      await local.readObject(body.bucket as string, `${body.pathPrefix}/_sluice/connection-test.json`),
    ).toContain('"service":"sluice"');
    const stored = await local.store.getDestination(ws.workspaceId, view.id);
    expect(stored?.role).toEqual({ roleArn: ROLE_ARN, externalId: view.externalId });
    expect(stored?.secret).toBeUndefined();

    // Act: read it back, test it, and change the role
    const got = await client.get(`/data-exports/${view.id}`);
    const tested = await client.post(`/data-exports/${view.id}/test`, {});
    const changed = await client.patch(`/data-exports/${view.id}`, { roleArn: OTHER_ROLE_ARN });
    // A role export stores no secret, so a move needs no credentials sent again (it is tested with the role).
    const moved = await client.patch(`/data-exports/${view.id}`, { region: 'us-west-2' });
    // Assess: the external ID stays for the life of the export; the new role is assumed with it
    expect(got.body.dataExport?.externalId).toBe(view.externalId);
    expect(tested.status).toBe(200);
    expect(changed.status).toBe(200);
    expect(changed.body.dataExport).toMatchObject({ roleArn: OTHER_ROLE_ARN, externalId: view.externalId });
    // Each connection test probed first with a wrong external ID.
    expect(
      sts.commandCalls(AssumeRoleCommand).filter((c) => isProbe(c.args[0].input.ExternalId)),
    ).toHaveLength(4);
    expect(roleCalls().map((input) => [input.RoleArn, input.ExternalId])).toEqual([
      [ROLE_ARN, view.externalId],
      [ROLE_ARN, view.externalId],
      [OTHER_ROLE_ARN, view.externalId],
      [OTHER_ROLE_ARN, view.externalId],
    ]);
    expect(moved.status).toBe(200);
    expect(moved.body.dataExport).toMatchObject({ region: 'us-west-2', roleArn: OTHER_ROLE_ARN });
    await client.delete(`/data-exports/${view.id}`);
  });

  it('fails a create whose role cannot be assumed with 400 connection_failed naming the role and the external ID to add; the same create succeeds once it is added', async () => {
    // Prepare
    deny();
    const body = roleBody();
    // Act
    const refused = await client.post('/data-exports', body);
    // Assess
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ success: false, code: 'connection_failed', retryable: false });
    expect(refused.body.error).toContain(ROLE_ARN);
    const externalId = /sts:ExternalId "(sluice-[0-9a-f]{32})"/.exec(refused.body.error ?? '')?.[1];
    expect(externalId).toBeDefined();
    expect((await client.get('/data-exports')).body.dataExports).toEqual([]);

    // Act: the customer adds the condition with that ID to the trust policy, and sends the same create again
    sts.reset();
    allow();
    const created = await client.post('/data-exports', body);
    // Assess
    expect(created.status).toBe(201);
    expect(created.body.dataExport?.externalId).toBe(externalId);
    await client.delete(`/data-exports/${created.body.dataExport?.id}`);
  });

  it("derives the external ID from the workspace's uid under Sluice's key, sealed in the control table", async () => {
    // Prepare
    allow();
    // Act
    const created = await client.post('/data-exports', roleBody());
    // Assess
    expect(created.status).toBe(201);
    const sealed = await local.store.getSealedExternalIdKey();
    expect(sealed).toBeDefined();
    const key = Buffer.from(await new SecretSealer(kmsKey).open(sealed!, EXTERNAL_ID_KEY_CONTEXT), 'hex');
    expect(key).toHaveLength(32);
    const { uid } = await local.store.ensureWorkspace(ws.workspaceId);
    expect(created.body.dataExport?.externalId).toBe(externalIdFor(key, uid));
    await client.delete(`/data-exports/${created.body.dataExport?.id}`);
  });

  it('gives another workspace another external ID for the same role', async () => {
    allow();
    const other = await local.newWorkspace();
    const otherClient = new ApiClient(onAws.url, other.client.apiKey);
    const mine = await client.post('/data-exports', roleBody());
    const theirs = await otherClient.post('/data-exports', roleBody());
    expect(mine.status).toBe(201);
    expect(theirs.status).toBe(201);
    expect(theirs.body.dataExport?.externalId).not.toBe(mine.body.dataExport?.externalId);
    await client.delete(`/data-exports/${mine.body.dataExport?.id}`);
    await otherClient.delete(`/data-exports/${theirs.body.dataExport?.id}`);
  });

  it('refuses switching an access key export to a role, and a role export to a key, with 400 invalid_input', async () => {
    allow();
    const keyExport = await client.post('/data-exports', local.createBody());
    const roleExport = await client.post('/data-exports', roleBody());
    const toRole = await client.patch(`/data-exports/${keyExport.body.dataExport?.id}`, {
      roleArn: ROLE_ARN,
    });
    const toKey = await client.patch(`/data-exports/${roleExport.body.dataExport?.id}`, {
      accessKeyId: LOCAL_S3_CREDENTIALS.accessKeyId,
      secretAccessKey: LOCAL_S3_CREDENTIALS.secretAccessKey,
    });
    expect(toRole.status).toBe(400);
    expect(toRole.body.issues?.[0]).toMatchObject({
      path: 'roleArn',
      message: expect.stringContaining('access key'),
    });
    expect(toKey.status).toBe(400);
    expect(toKey.body.issues?.[0]).toMatchObject({
      path: 'accessKeyId',
      message: expect.stringContaining('IAM role'),
    });
    await client.delete(`/data-exports/${keyExport.body.dataExport?.id}`);
    await client.delete(`/data-exports/${roleExport.body.dataExport?.id}`);
  });
});

describe('a role Sluice refuses', () => {
  it('refuses a role whose trust policy admits Sluice without the external ID, as it refuses a missing role', async () => {
    // Prepare
    const body = roleBody();
    trustWithoutCondition();
    // Act
    const trusted = await client.post('/data-exports', body);
    sts.reset();
    deny();
    const missing = await client.post('/data-exports', body);
    // Assess: the same answer, so a caller learns nothing of a role that is not theirs
    expect(trusted.status).toBe(400);
    expect(trusted.body).toMatchObject({ code: 'connection_failed', retryable: false });
    expect(trusted.body).toEqual(missing.body);
    expect((await client.get('/data-exports')).body.dataExports).toEqual([]);
  });

  it("refuses a roleArn in Sluice's own account with 400 invalid_input, without calling STS", async () => {
    // Prepare
    allow();
    const own = `arn:aws:iam::${OWN_ACCOUNT_ID}:role/sluice-api`;
    const created = await client.post('/data-exports', roleBody());
    expect(created.status).toBe(201);
    const id = created.body.dataExport!.id as string;
    sts.reset();
    allow();
    // Act
    const create = await client.post('/data-exports', roleBody(own));
    const change = await client.patch(`/data-exports/${id}`, { roleArn: own });
    // Assess
    for (const response of [create, change]) {
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({ code: 'invalid_input' });
      expect(response.body.issues).toEqual([
        {
          path: 'roleArn',
          message: "roleArn names a role in Sluice's own AWS account: name a role of your own account.",
        },
      ]);
    }
    expect(sts.commandCalls(AssumeRoleCommand)).toHaveLength(0);
    await client.delete(`/data-exports/${id}`);
  });
});

describe('a role export on the local runtime (no STS)', () => {
  it('fails the create with 400 connection_failed saying role exports need Sluice on AWS, without calling STS', async () => {
    const response = await ws.client.post('/data-exports', roleBody());
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ code: 'connection_failed', error: ROLE_UNAVAILABLE_MESSAGE });
    expect(sts.commandCalls(AssumeRoleCommand)).toHaveLength(0);
  });
});
