import { roleSessionName } from '@sluice/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type SlowBucket, startSlowBucket } from '../../../test/helpers/slow-bucket.js';
import { assumeRoleCredentials, type RoleCredentials } from './role.js';

/** Against a real local HTTP server standing in for STS (no mock): `AWS_ENDPOINT_URL_STS` points the client at it. */
const ROLE_ARN = 'arn:aws:iam::111122223333:role/sluice-writer';
const role: RoleCredentials = {
  roleArn: ROLE_ARN,
  externalId: 'sluice-0123456789abcdef0123456789abcdef',
  sessionName: roleSessionName('exp_0123456789abcdef01234567'),
};

let sts: SlowBucket | undefined;

afterEach(async () => {
  vi.unstubAllEnvs();
  await sts?.close();
  sts = undefined;
});

describe('the total deadline of AssumeRole', () => {
  it.each(['headers', 'body'] as const)(
    'ends an AssumeRole whose STS trickles its %s, as a transient error naming the deadline',
    async (trickled) => {
      // Prepare
      sts = await startSlowBucket({ intervalMs: 100, answerFor: () => trickled });
      vi.stubEnv('AWS_ENDPOINT_URL_STS', sts.endpoint);
      vi.stubEnv('AWS_ACCESS_KEY_ID', 'AKIASLUICEOWN0000000');
      vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'sluice-own-secret');
      const provider = assumeRoleCredentials(role, { region: 'eu-west-1', deadlineMs: 1_000 });

      // Act
      const error = await provider().then(
        () => undefined,
        (failure: Error) => failure,
      );

      // Assess
      expect(error).toMatchObject({
        name: 'BucketUnknownError',
        retryable: true,
        message: "AWS STS did not answer Sluice's AssumeRole in 1 s. Sluice will retry.",
      });
      expect(sts.requests[0]).toMatch(/^POST \//);
    },
  );
});
