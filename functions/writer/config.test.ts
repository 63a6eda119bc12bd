import { afterEach, describe, expect, it, vi } from 'vitest';

const saved = { ...process.env };

afterEach(() => {
  process.env = { ...saved };
  vi.resetModules();
});

describe('engine function configuration', () => {
  it('reads the writer configuration at load', async () => {
    Object.assign(process.env, {
      SLUICE_CONTROL_TABLE: 'control',
      SLUICE_EVENTS_TABLE: 'events',
      SLUICE_SUBSCRIBERS_TABLE: 'subscribers',
      SLUICE_KMS_KEY_ID: 'key-1',
    });
    const { config } = await import('./config.js');
    expect(config).toEqual({
      controlTable: 'control',
      eventsTable: 'events',
      subscribersTable: 'subscribers',
      kmsKeyId: 'key-1',
    });
  });

  it('fails the writer at load without the KMS key id', async () => {
    Object.assign(process.env, {
      SLUICE_CONTROL_TABLE: 'c',
      SLUICE_EVENTS_TABLE: 'e',
      SLUICE_SUBSCRIBERS_TABLE: 's',
    });
    delete process.env.SLUICE_KMS_KEY_ID;
    await expect(import('./config.js')).rejects.toThrow('SLUICE_KMS_KEY_ID is not set');
  });

  it('fails dispatch at load without the events table, and run-control without the control table', async () => {
    process.env.SLUICE_CONTROL_TABLE = 'c';
    delete process.env.SLUICE_EVENTS_TABLE;
    await expect(import('../dispatch/config.js')).rejects.toThrow('SLUICE_EVENTS_TABLE is not set');
    delete process.env.SLUICE_CONTROL_TABLE;
    await expect(import('../run-control/config.js')).rejects.toThrow('SLUICE_CONTROL_TABLE is not set');
  });
});
