import { randomBytes } from 'node:crypto';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { type ApiKeyRole, type ApiKeyScope, ControlStore } from '@sluice/control';
import { type ApiServerOptions, startApiServer } from '@sluice/local';
import { LOCAL_BUCKET, LOCAL_REGION, LOCAL_S3_CREDENTIALS } from '@sluice/devstack';
import { ApiClient, recordedResponses } from './api-client.js';
import { captureOutput, type OutputCapture } from './output-capture.js';

/** A workspace made for one test, with a way to mint its keys. */
export interface TestWorkspace {
  workspaceId: string;
  /** An owner key with every scope. */
  client: ApiClient;
  /** A client with a new key of this workspace. */
  clientWith(options: { role?: ApiKeyRole; scopes?: readonly ApiKeyScope[] }): Promise<ApiClient>;
}

/** A running API on the local services, with the output of the worker captured. */
export interface ContractHarness {
  url: string;
  store: ControlStore;
  /** s3rver, to look at what the connection test wrote. */
  s3: S3Client;
  /** The local S3 endpoint (its origin is the allowedEndpoints the local runtime passes). */
  s3Endpoint: string;
  output: OutputCapture;
  /** Secrets used in requests: none may appear in a response or a log line. */
  secrets: Set<string>;
  newWorkspace(): Promise<TestWorkspace>;
  /** A client without a key. */
  anonymous(): ApiClient;
  /** A valid create body for the local bucket; `overrides` replace fields (`undefined` removes one). */
  createBody(overrides?: Record<string, unknown>): Record<string, unknown>;
  /** The text of an object in s3rver, or undefined when it does not exist. */
  readObject(bucket: string, key: string): Promise<string | undefined>;
  /**
   * Stops the server and the capture, then returns the secrets found in any response or captured output
   * line (expected: none). Throws if nothing was captured at all, since then the check would prove nothing.
   */
  closeAndFindLeaks(): Promise<string[]>;
}

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the tests through vitest (its global setup sets it)`);
  return value;
}

/** A fresh id, safe as a workspace id. */
export function uniqueId(prefix: string): string {
  return `${prefix}${randomBytes(6).toString('hex')}`;
}

/**
 * Starts the API over real HTTP (`startApiServer` with the real authorizer and API handlers) against the
 * global setup's DynamoDB Local, s3rver and local KMS, and starts capturing stdout and stderr. `handlers`
 * replaces the functions (to inject a broken store, for instance); `site` serves other files beside the API
 * (the console).
 */
export async function startContractHarness(
  options: Pick<ApiServerOptions, 'handlers' | 'site' | 'checkLocalLifecycle'> = {},
): Promise<ContractHarness> {
  // Captured, and shown too when SLUICE_TEST_LOGS=1.
  const output = captureOutput({ passThrough: process.env.SLUICE_TEST_LOGS === '1' });
  const s3Endpoint = env('SLUICE_LOCAL_S3_ENDPOINT');
  const store = new ControlStore({ tableName: env('SLUICE_CONTROL_TABLE') });
  const server = await startApiServer({
    host: '127.0.0.1',
    port: 0,
    ...(options.handlers ? { handlers: options.handlers } : {}),
    ...(options.site ? { site: options.site } : {}),
    // By default the API as a customer's bucket meets it: the lifecycle check (and its warning) included.
    checkLocalLifecycle: options.checkLocalLifecycle ?? true,
  });
  const s3 = new S3Client({
    endpoint: s3Endpoint,
    region: LOCAL_REGION,
    forcePathStyle: true,
    credentials: LOCAL_S3_CREDENTIALS,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  const secrets = new Set<string>([LOCAL_S3_CREDENTIALS.secretAccessKey]);
  const anonymous = () => new ApiClient(server.url, undefined);

  async function newWorkspace(): Promise<TestWorkspace> {
    const workspaceId = uniqueId('ws_');
    await store.ensureWorkspace(workspaceId);
    const clientWith: TestWorkspace['clientWith'] = async ({ role = 'owner', scopes } = {}) => {
      const { apiKey } = await store.createApiKey({ workspaceId, role, ...(scopes ? { scopes } : {}) });
      return anonymous().withKey(apiKey);
    };
    return { workspaceId, client: await clientWith({}), clientWith };
  }

  return {
    url: server.url,
    store,
    s3,
    s3Endpoint,
    output,
    secrets,
    newWorkspace,
    anonymous,
    createBody(overrides = {}) {
      const body: Record<string, unknown> = {
        name: 'Analytics lake',
        provider: 's3',
        bucket: LOCAL_BUCKET,
        endpoint: s3Endpoint,
        pathPrefix: uniqueId('contract/'),
        accessKeyId: LOCAL_S3_CREDENTIALS.accessKeyId,
        secretAccessKey: LOCAL_S3_CREDENTIALS.secretAccessKey,
        datasets: ['email_events', 'custom_events', 'subscribers'],
        frequency: 'every_15_minutes',
      };
      for (const [key, value] of Object.entries(overrides)) {
        if (value === undefined) delete body[key];
        else body[key] = value;
      }
      return body;
    },
    async readObject(bucket, key) {
      try {
        const result = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        return await result.Body?.transformToString();
      } catch (error) {
        if ((error as { name?: string }).name === 'NoSuchKey') return undefined;
        throw error;
      }
    },
    async closeAndFindLeaks() {
      await server.close();
      s3.destroy();
      output.stop();
      const logs = output.text();
      // The API's access line (the service name is the stack's POWERTOOLS_SERVICE_NAME, unset here).
      if (!logs.includes('"message":"Request"')) {
        throw new Error('No API log line was captured: the secrets check would prove nothing');
      }
      const haystack = `${recordedResponses.join('\n')}\n${logs}`;
      return [...secrets].filter((secret) => haystack.includes(secret));
    },
  };
}
