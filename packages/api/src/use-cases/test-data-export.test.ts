import { type BucketLocation, newDestination } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import type { UseCaseDeps } from './deps.js';
import { testDataExport } from './test-data-export.js';

/** The one dependency this test looks at: the location the connection test is asked to write to. */
function depsFor(encryption: BucketLocation['encryption']): { deps: UseCaseDeps; tested: BucketLocation[] } {
  const tested: BucketLocation[] = [];
  const destination = {
    ...newDestination({
      workspaceId: 'ws_1',
      id: 'exp_0123456789abcdef01234567',
      name: 'Lake',
      provider: 's3',
      bucket: 'acme-exports',
      region: 'eu-west-1',
      endpoint: null,
      pathPrefix: 'sluice',
      accessKeyId: 'AKIAEXAMPLE',
      secret: { encryptedDataKey: 'a', iv: 'b', ciphertext: 'c', tag: 'd' },
      datasets: ['email_events'],
      frequency: 'hourly',
      now: new Date('2026-12-01T00:00:00Z'),
    } as Parameters<typeof newDestination>[0]),
    encryption,
  };
  const deps = {
    store: { getDestination: async () => destination },
    sealer: { open: async () => 'secret' },
    testConnection: async (location: BucketLocation) => {
      tested.push(location);
      return {};
    },
    now: () => new Date('2026-12-04T00:00:00Z'),
  } as unknown as UseCaseDeps;
  return { deps, tested };
}

describe('testDataExport', () => {
  it.each([
    [{ serverSideEncryption: 'aws:kms' as const, kmsKeyId: 'alias/exports' }],
    [{ serverSideEncryption: 'AES256' as const }],
    [null],
  ])("tests with the export's server-side encryption settings: %j", async (encryption) => {
    // Prepare
    const { deps, tested } = depsFor(encryption);

    // Act
    await testDataExport(deps, { workspaceId: 'ws_1' } as never, 'exp_0123456789abcdef01234567');

    // Assess
    expect(tested).toHaveLength(1);
    expect(tested[0]?.encryption ?? null).toEqual(encryption);
  });
});
