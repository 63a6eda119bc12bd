import { afterEach, describe, expect, it, vi } from 'vitest';

const saved = { ...process.env };

afterEach(() => {
  process.env = { ...saved };
  vi.resetModules();
});

describe('function configuration', () => {
  it('reads the API configuration at load', async () => {
    process.env.SLUICE_CONTROL_TABLE = 'control';
    process.env.SLUICE_KMS_KEY_ID = 'arn:aws:kms:us-east-1:000000000000:key/1';
    process.env.SLUICE_API_KEY_RATE_LIMIT = '10';
    process.env.SLUICE_API_KEY_BURST_LIMIT = '20';
    const { config } = await import('./config.js');
    expect(config).toEqual({
      controlTable: 'control',
      kmsKeyId: 'arn:aws:kms:us-east-1:000000000000:key/1',
      apiKeyRateLimit: { ratePerSecond: 10, burst: 20 },
    });
  });

  it.each(['', '0', '2.5', 'ten'])('fails at load when the per-key rate limit is %j', async (value) => {
    process.env.SLUICE_CONTROL_TABLE = 'control';
    process.env.SLUICE_KMS_KEY_ID = 'arn:aws:kms:us-east-1:000000000000:key/1';
    process.env.SLUICE_API_KEY_RATE_LIMIT = value;
    process.env.SLUICE_API_KEY_BURST_LIMIT = '20';
    await expect(import('./config.js')).rejects.toThrow('SLUICE_API_KEY_RATE_LIMIT');
  });

  it('fails at load when a variable is missing', async () => {
    process.env.SLUICE_CONTROL_TABLE = 'control';
    delete process.env.SLUICE_KMS_KEY_ID;
    await expect(import('./config.js')).rejects.toThrow('SLUICE_KMS_KEY_ID is not set');
  });

  it('fails the authorizer at load without its table', async () => {
    delete process.env.SLUICE_CONTROL_TABLE;
    await expect(import('../authorizer/config.js')).rejects.toThrow('SLUICE_CONTROL_TABLE is not set');
  });
});
