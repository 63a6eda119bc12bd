import { requiredEnv } from '@sluice/core';

/** Configuration of the run-control function, read once at load; throws on a missing variable. */
export const config = {
  /** The control table: destinations, cursors, leases, runs. */
  controlTable: requiredEnv('SLUICE_CONTROL_TABLE'),
  /** The deployment stage: the `Stage` dimension of the engine's metrics. */
  stage: requiredEnv('SLUICE_STAGE'),
} as const;
