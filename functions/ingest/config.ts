import { requiredEnv } from '@sluice/core';

function retentionDays(): number | undefined {
  const value = process.env.SLUICE_EVENT_RETENTION_DAYS;
  return value === undefined || value === '' ? undefined : Number(value);
}

/** Configuration of the ingest function, read once at load; throws on a missing variable. */
export const config = {
  /** The event log table. */
  eventsTable: requiredEnv('SLUICE_EVENTS_TABLE'),
  /** The subscribers table. */
  subscribersTable: requiredEnv('SLUICE_SUBSCRIBERS_TABLE'),
  /** Days events are kept after they are recorded; the writer checks it (above 30) and defaults to 35. */
  retentionDays: retentionDays(),
} as const;
