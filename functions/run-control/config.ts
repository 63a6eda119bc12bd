import { requiredEnv } from '@sluice/core';

/** Configuration of the run-control function, read once at load; throws on a missing variable. */
export const config = {
  /** The control table: destinations, cursors, leases, runs. */
  controlTable: requiredEnv('SLUICE_CONTROL_TABLE'),
} as const;
