import { describe, expect, it } from 'vitest';
import { readWriterConfig } from './config.js';
import { createWriterFunction } from './function.js';

const ENV = {
  SLUICE_CONTROL_TABLE: 'control',
  SLUICE_EVENTS_TABLE: 'events',
  SLUICE_SUBSCRIBERS_TABLE: 'subscribers',
  SLUICE_KMS_KEY_ID: 'key-1',
  SLUICE_ARCHIVE_BUCKET: 'archive',
};

describe('the writer function is built with every engine dependency', () => {
  it('fails when it is built without one, naming it (not at its first window)', () => {
    expect(() => createWriterFunction(readWriterConfig(ENV), { overrides: { sealer: undefined } })).toThrow(
      'The engine needs sealer (writeWindow)',
    );
    expect(() => createWriterFunction(readWriterConfig(ENV))).not.toThrow();
  });
});
