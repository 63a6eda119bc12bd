import { requiredEnv } from '@sluice/core';
import { parseEventRetentionDays } from '@sluice/eventlog';

/** Configuration of the ingest function, read once at load; throws on a missing or invalid variable. */
export const config = {
  /** The event log table. */
  eventsTable: requiredEnv('SLUICE_EVENTS_TABLE'),
  /** The subscribers table. */
  subscribersTable: requiredEnv('SLUICE_SUBSCRIBERS_TABLE'),
  /** Seconds events are kept after they are recorded: `SLUICE_EVENT_RETENTION_DAYS` (above 30), else 35 days. */
  retentionSeconds: parseEventRetentionDays(process.env.SLUICE_EVENT_RETENTION_DAYS),
} as const;
