import { describe, expect, it } from 'vitest';
import { exportCurl, localPorts } from './start.js';

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
    const curl = exportCurl(local);
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
    });
  });
});
