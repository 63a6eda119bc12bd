import { describe, expect, it } from 'vitest';
import { exportCurl, firstExportSteps, localPorts } from './start.js';

describe('npm start helpers', () => {
  it('reads the ports from the environment, with the documented defaults', () => {
    // Act
    const defaults = localPorts({});
    const custom = localPorts({ SLUICE_API_PORT: '3100', SLUICE_S3_PORT: '5569' });
    // Assess
    expect(defaults).toEqual({ api: 3000, s3: 4569, dynamodb: 8000, kms: 4599 });
    expect(custom).toEqual({ api: 3100, s3: 5569, dynamodb: 8000, kms: 4599 });
    expect(() => localPorts({ SLUICE_KMS_PORT: 'http' })).toThrow(/SLUICE_KMS_PORT/);
    expect(() => localPorts({ SLUICE_DYNAMODB_PORT: '70000' })).toThrow(/not a port/);
  });

  it('prints a curl whose body creates an S3 export of all four datasets to the local bucket', () => {
    // Prepare
    const local = {
      apiUrl: 'http://127.0.0.1:3000/v1',
      apiKey: 'slk_example',
      workspaceId: 'ws_local',
      s3: {
        endpoint: 'http://127.0.0.1:4569',
        region: 'us-east-1',
        bucket: 'local-exports',
        accessKeyId: 'S3RVER',
        secretAccessKey: 'S3RVER',
      },
    };
    // Act
    const curl = exportCurl(local, Date.parse('2026-12-04T19:00:30.500Z'));
    const body = JSON.parse(/-d '(.*)'$/.exec(curl)?.[1] ?? 'null');
    // Assess
    expect(curl).toContain('curl -sS -X POST http://127.0.0.1:3000/v1/data-exports');
    expect(curl).toContain("-H 'Authorization: Bearer slk_example'");
    expect(body).toEqual({
      name: 'Local bucket',
      provider: 's3',
      bucket: 'local-exports',
      endpoint: 'http://127.0.0.1:4569',
      region: 'us-east-1',
      accessKeyId: 'S3RVER',
      secretAccessKey: 'S3RVER',
      datasets: ['email_events', 'sms_events', 'custom_events', 'subscribers'],
      frequency: 'every_5_minutes',
      startFrom: '2026-12-04T18:00:00.000Z',
    });
  });

  it('prints the first export with the seed before the create, the create from before the seeded hour', () => {
    // Prepare
    const local = {
      apiUrl: 'http://127.0.0.1:3000/v1',
      apiKey: 'slk_example',
      workspaceId: 'ws_local',
      s3: {
        endpoint: 'http://127.0.0.1:4569',
        region: 'us-east-1',
        bucket: 'local-exports',
        accessKeyId: 'S3RVER',
        secretAccessKey: 'S3RVER',
      },
    };
    const startedMs = Date.parse('2026-12-04T19:00:30.500Z');
    // Act
    const steps = firstExportSteps(local, startedMs, 60, '.sluice/data/s3/local-exports');
    // Assess: seed first, then the create; the seeded hour (from any later seed) is at or after startFrom
    const seedAt = steps.findIndex((line) => line.startsWith('npm run sluice -- seed'));
    const curlAt = steps.findIndex((line) => line.startsWith('curl '));
    expect(seedAt).toBeGreaterThan(-1);
    expect(curlAt).toBeGreaterThan(seedAt);
    expect(steps[seedAt]).toBe(
      'npm run sluice -- seed --workspace ws_local --events 5000 --subscribers 100 --since 1h',
    );
    const body = JSON.parse(/-d '(.*)'$/m.exec(steps.join('\n'))?.[1] ?? 'null');
    expect(Date.parse(body.startFrom)).toBeLessThanOrEqual(startedMs - 3_600_000);
    expect(steps.join('\n')).toContain('next tick (every 60 s)');
  });
});
