import { requiredEnv } from '@sluice/core';

/** Configuration of the authorizer function, read once at load; throws on a missing variable. */
export const config = {
  /** The control table holding API keys (by SHA-256). */
  controlTable: requiredEnv('SLUICE_CONTROL_TABLE'),
} as const;
