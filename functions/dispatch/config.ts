import { requiredEnv } from '@sluice/core';

/** Configuration of the dispatch function, read once at load; throws on a missing variable. */
export const config = {
  /** The control table and its due index. */
  controlTable: requiredEnv('SLUICE_CONTROL_TABLE'),
  /** The event log table: one cheap Query per dataset looks for new rows. */
  eventsTable: requiredEnv('SLUICE_EVENTS_TABLE'),
  /** The subscribers table. */
  subscribersTable: requiredEnv('SLUICE_SUBSCRIBERS_TABLE'),
} as const;
