import { describe, expect, it } from 'vitest';
import { readDispatchConfig } from '../dispatch/config.js';
import { readRunControlConfig } from '../run-control/config.js';
import { readWriterConfig } from './config.js';

describe('engine function configuration', () => {
  it('reads the writer configuration', () => {
    const config = readWriterConfig({
      SLUICE_CONTROL_TABLE: 'control',
      SLUICE_EVENTS_TABLE: 'events',
      SLUICE_SUBSCRIBERS_TABLE: 'subscribers',
      SLUICE_KMS_KEY_ID: 'key-1',
      SLUICE_ARCHIVE_BUCKET: 'archive',
      SLUICE_EVENT_RETENTION_DAYS: '2',
    });
    expect(config).toEqual({
      controlTable: 'control',
      eventsTable: 'events',
      subscribersTable: 'subscribers',
      kmsKeyId: 'key-1',
      archiveBucket: 'archive',
      eventRetentionMs: 2 * 86_400_000,
    });
  });

  it('fails the writer without the KMS key id', () => {
    const env = {
      SLUICE_CONTROL_TABLE: 'c',
      SLUICE_EVENTS_TABLE: 'e',
      SLUICE_SUBSCRIBERS_TABLE: 's',
      SLUICE_ARCHIVE_BUCKET: 'a',
    };
    expect(() => readWriterConfig(env)).toThrow('SLUICE_KMS_KEY_ID is not set');
    expect(() => readWriterConfig({ ...env, SLUICE_KMS_KEY_ID: 'k', SLUICE_ARCHIVE_BUCKET: '' })).toThrow(
      'SLUICE_ARCHIVE_BUCKET is not set',
    );
  });

  it('fails dispatch without the events table, and run-control without the control table', () => {
    expect(() => readDispatchConfig({ SLUICE_CONTROL_TABLE: 'c', SLUICE_SUBSCRIBERS_TABLE: 's' })).toThrow(
      'SLUICE_EVENTS_TABLE is not set',
    );
    expect(() => readRunControlConfig({ SLUICE_STAGE: 'prod' })).toThrow('SLUICE_CONTROL_TABLE is not set');
  });

  it('reads run-control budget and retention, with defaults, and refuses a value that is not positive', () => {
    const env = { SLUICE_CONTROL_TABLE: 'c', SLUICE_STAGE: 'prod', SLUICE_EVENT_BUS_NAME: 'sluice-prod' };
    expect(readRunControlConfig(env)).toEqual({
      controlTable: 'c',
      runBudgetMs: 180_000,
      eventRetentionMs: 35 * 86_400_000,
      stage: 'prod',
      eventBusName: 'sluice-prod',
    });
    expect(() => readRunControlConfig({ ...env, SLUICE_EVENT_BUS_NAME: '' })).toThrow(
      'SLUICE_EVENT_BUS_NAME is not set',
    );
    expect(readRunControlConfig({ ...env, SLUICE_RUN_BUDGET_SECONDS: '0.5' }).runBudgetMs).toBe(500);
    expect(() => readRunControlConfig({ ...env, SLUICE_RUN_BUDGET_SECONDS: '-1' })).toThrow(
      'SLUICE_RUN_BUDGET_SECONDS must be a positive number, got -1',
    );
  });
});
