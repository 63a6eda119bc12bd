/**
 * The one error model, end to end through fake clients: an SDK failure becomes a domain error that says what
 * failed and whether a retry helps (the stores, the sealer), and that becomes one HTTP answer (`toHttpError`,
 * `errorResponse`) and one workflow name (`classifyEngineError`).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DecryptCommand, GenerateDataKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { ControlStore } from '@sluice/control';
import {
  DatabaseUnavailableError,
  KmsUnavailableError,
  RateLimitedError,
  SecretRejectedError,
} from '@sluice/core';
import { classifyEngineError, PERMANENT_ERROR_NAMES, TRANSIENT_ERROR_NAMES } from '@sluice/engine';
import { SecretSealer } from '@sluice/secrets';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { toHttpError } from './errors.js';
import { errorResponse } from './http.js';

const dynamo = mockClient(DynamoDBDocumentClient);
const kms = mockClient(KMSClient);

afterEach(() => {
  dynamo.reset();
  kms.reset();
});

function awsError(name: string, status: number): Error {
  return Object.assign(new Error(`${name} from the service`), {
    name,
    $metadata: { httpStatusCode: status },
  });
}

const context = { workspaceId: 'ws_1', destinationId: 'exp_1' };
const sealed = {
  encryptedDataKey: 'AAAA',
  iv: 'AAAAAAAAAAAAAAAA',
  ciphertext: 'AAAA',
  tag: 'AAAAAAAAAAAAAAAAAAAAAA==',
};

describe('the database', () => {
  it('throttled: a retryable DatabaseUnavailableError, 503 naming the database, retried by the workflows', async () => {
    // Prepare
    dynamo.on(QueryCommand).rejects(awsError('ProvisionedThroughputExceededException', 400));
    const store = new ControlStore({
      client: DynamoDBDocumentClient.from(new DynamoDBClient({})),
      tableName: 't',
    });

    // Act
    const failure = await store.getDestination('ws_1', 'exp_1').catch((error: unknown) => error);
    const response = errorResponse(failure);

    // Assess
    expect(failure).toBeInstanceOf(DatabaseUnavailableError);
    expect((failure as DatabaseUnavailableError).retryable).toBe(true);
    expect(response.statusCode).toBe(503);
    expect(response.headers['Retry-After']).toBe('1');
    expect(JSON.parse(response.body)).toEqual({
      success: false,
      error: 'The service could not reach its database for a moment. Retry the request.',
      code: 'SERVICE_UNAVAILABLE',
      retryable: true,
    });
    expect(TRANSIENT_ERROR_NAMES).toContain(classifyEngineError(failure).name);
  });

  it('refusing for another reason: passed on as it is, a generic 500', async () => {
    // Prepare
    dynamo.on(QueryCommand).rejects(awsError('ValidationException', 400));
    const store = new ControlStore({
      client: DynamoDBDocumentClient.from(new DynamoDBClient({})),
      tableName: 't',
    });

    // Act
    const failure = await store.getDestination('ws_1', 'exp_1').catch((error: unknown) => error);

    // Assess
    expect((failure as Error).name).toBe('ValidationException');
    expect(toHttpError(failure)).toBeUndefined();
    expect(errorResponse(failure, { error: () => undefined } as never).statusCode).toBe(500);
    expect(classifyEngineError(failure).name).toBe('UnexpectedExportError');
  });
});

describe('the key service', () => {
  it('throttled on seal or open: a retryable KmsUnavailableError, 503 naming the key service, not the database', async () => {
    // Prepare
    kms.on(GenerateDataKeyCommand).rejects(awsError('ThrottlingException', 400));
    kms.on(DecryptCommand).rejects(awsError('KMSInternalException', 500));
    const sealer = new SecretSealer({ client: new KMSClient({}), keyId: 'key-1' });

    // Act
    const onSeal = await sealer.seal('secret', context).catch((error: unknown) => error);
    const onOpen = await sealer.open(sealed, context).catch((error: unknown) => error);

    // Assess
    for (const failure of [onSeal, onOpen]) {
      expect(failure).toBeInstanceOf(KmsUnavailableError);
      const body = JSON.parse(errorResponse(failure).body) as { error: string; code: string };
      expect(body).toMatchObject({ code: 'SERVICE_UNAVAILABLE', retryable: true });
      expect(body.error).toBe('The service could not reach its key service for a moment. Retry the request.');
      expect(TRANSIENT_ERROR_NAMES).toContain(classifyEngineError(failure).name);
    }
  });

  it('refusing the ciphertext: a permanent SecretRejectedError, never retried, a clear 409 secret_rejected', async () => {
    // Prepare
    kms.on(DecryptCommand).rejects(awsError('InvalidCiphertextException', 400));
    const sealer = new SecretSealer({ client: new KMSClient({}), keyId: 'key-1' });

    // Act
    const failure = await sealer.open(sealed, context).catch((error: unknown) => error);

    // Assess
    expect(failure).toBeInstanceOf(SecretRejectedError);
    expect((failure as SecretRejectedError).retryable).toBe(false);
    expect(PERMANENT_ERROR_NAMES).toContain(classifyEngineError(failure).name);
    const response = errorResponse(failure, { error: () => undefined } as never);
    expect(response.statusCode).toBe(409);
    expect(JSON.parse(response.body)).toMatchObject({
      code: 'secret_rejected',
      retryable: false,
      error:
        'The stored secret of this export could not be decrypted. Update the export with its credentials again.',
    });
  });
});

describe('the caller over its per-key rate limit', () => {
  it('a retryable RateLimitedError, 429 rate_limited with Retry-After in whole seconds', () => {
    // Act
    const response = errorResponse(new RateLimitedError(3));

    // Assess
    expect(new RateLimitedError(3).retryable).toBe(true);
    expect(response.statusCode).toBe(429);
    expect(response.headers['Retry-After']).toBe('3');
    expect(JSON.parse(response.body)).toEqual({
      success: false,
      error: 'Too many requests with this API key. Retry after 3 s.',
      code: 'rate_limited',
      retryable: true,
    });
  });
});
