import { describe, expect, it } from 'vitest';
import { readApiConfig } from './config.js';
import { readAuthorizerConfig } from '../authorizer/config.js';
import { readIngestConfig } from '../ingest/config.js';

describe('function configuration', () => {
  const apiEnv = {
    SLUICE_CONTROL_TABLE: 'control',
    SLUICE_KMS_KEY_ID: 'arn:aws:kms:us-east-1:000000000000:key/1',
    SLUICE_API_KEY_RATE_LIMIT: '10',
    SLUICE_API_KEY_BURST_LIMIT: '20',
    SLUICE_ACCOUNT_ID: '111122223333',
  };

  it('reads the API configuration from the environment it is given', () => {
    expect(readApiConfig(apiEnv)).toEqual({
      controlTable: 'control',
      kmsKeyId: 'arn:aws:kms:us-east-1:000000000000:key/1',
      apiKeyRateLimit: { ratePerSecond: 10, burst: 20 },
      eventRetentionMs: 35 * 86_400_000,
      accountId: '111122223333',
      maxExportsPerWorkspace: 100,
    });
    expect(readApiConfig({ ...apiEnv, SLUICE_EVENT_RETENTION_DAYS: '2' }).eventRetentionMs).toBe(
      2 * 86_400_000,
    );
  });

  it('reads the most data exports a workspace may have, refusing what is not a whole number from 1', () => {
    expect(readApiConfig({ ...apiEnv, SLUICE_MAX_EXPORTS_PER_WORKSPACE: '7' }).maxExportsPerWorkspace).toBe(
      7,
    );
    for (const value of ['0', '2.5', 'many']) {
      expect(() => readApiConfig({ ...apiEnv, SLUICE_MAX_EXPORTS_PER_WORKSPACE: value })).toThrow(
        'SLUICE_MAX_EXPORTS_PER_WORKSPACE',
      );
    }
  });

  it.each(['', '0', '2.5', 'ten'])('fails when the per-key rate limit is %j', (value) => {
    expect(() => readApiConfig({ ...apiEnv, SLUICE_API_KEY_RATE_LIMIT: value })).toThrow(
      'SLUICE_API_KEY_RATE_LIMIT',
    );
  });

  it('fails when the per-key burst is missing', () => {
    const { SLUICE_API_KEY_BURST_LIMIT: _burst, ...withoutBurst } = apiEnv;
    expect(() => readApiConfig(withoutBurst)).toThrow('SLUICE_API_KEY_BURST_LIMIT is not set');
  });

  it('fails naming a missing or empty variable', () => {
    expect(() => readApiConfig({ ...apiEnv, SLUICE_KMS_KEY_ID: undefined })).toThrow(
      'SLUICE_KMS_KEY_ID is not set',
    );
    expect(() => readApiConfig({ ...apiEnv, SLUICE_CONTROL_TABLE: '', SLUICE_KMS_KEY_ID: '' })).toThrow(
      'SLUICE_CONTROL_TABLE is not set; SLUICE_KMS_KEY_ID is not set',
    );
  });

  it('fails the authorizer without its table', () => {
    expect(() => readAuthorizerConfig({})).toThrow('SLUICE_CONTROL_TABLE is not set');
  });

  it('fails the ingest function without the control table, where it keeps rejected events', () => {
    expect(() => readIngestConfig({ SLUICE_EVENTS_TABLE: 'e', SLUICE_SUBSCRIBERS_TABLE: 's' })).toThrow(
      'SLUICE_CONTROL_TABLE is not set',
    );
  });

  it('reads the ingest retention in days, refusing less than one', () => {
    const tables = { SLUICE_EVENTS_TABLE: 'e', SLUICE_SUBSCRIBERS_TABLE: 's', SLUICE_CONTROL_TABLE: 'c' };
    expect(readIngestConfig(tables).retentionSeconds).toBe(35 * 86_400);
    expect(readIngestConfig({ ...tables, SLUICE_EVENT_RETENTION_DAYS: '60' }).retentionSeconds).toBe(
      60 * 86_400,
    );
    expect(() => readIngestConfig({ ...tables, SLUICE_EVENT_RETENTION_DAYS: '0' })).toThrow(
      'SLUICE_EVENT_RETENTION_DAYS must be a whole number of days from 1',
    );
  });
});
