import { requiredEnv, requiredPositiveIntegerEnv } from '@sluice/core';

/** Configuration of the API function, read once at load; throws on a missing variable. */
export const config = {
  /** The control table: destinations, cursors, runs. */
  controlTable: requiredEnv('SLUICE_CONTROL_TABLE'),
  /** The KMS key that wraps each destination's data key. */
  kmsKeyId: requiredEnv('SLUICE_KMS_KEY_ID'),
  /** Per API key: steady requests a second and burst (settings `apiKeyRateLimit`, `apiKeyBurstLimit`). */
  apiKeyRateLimit: {
    ratePerSecond: requiredPositiveIntegerEnv('SLUICE_API_KEY_RATE_LIMIT'),
    burst: requiredPositiveIntegerEnv('SLUICE_API_KEY_BURST_LIMIT'),
  },
} as const;
