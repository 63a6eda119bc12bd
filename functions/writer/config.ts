import { requiredEnv } from '@sluice/core';

/** Configuration of the writer function, read once at load; throws on a missing variable. */
export const config = {
  /** The control table: the destination is re-read before every file. */
  controlTable: requiredEnv('SLUICE_CONTROL_TABLE'),
  /** The event log table. */
  eventsTable: requiredEnv('SLUICE_EVENTS_TABLE'),
  /** The subscribers table. */
  subscribersTable: requiredEnv('SLUICE_SUBSCRIBERS_TABLE'),
  /** The KMS key the destinations' data keys were generated under. */
  kmsKeyId: requiredEnv('SLUICE_KMS_KEY_ID'),
} as const;
