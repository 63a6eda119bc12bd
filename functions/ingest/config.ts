/** Configuration of the ingest function, read once at load; throws on a missing variable. */
function required(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is not set`);
  return value;
}

function retentionDays(): number | undefined {
  const value = process.env.SLUICE_EVENT_RETENTION_DAYS;
  return value === undefined || value === '' ? undefined : Number(value);
}

export const config = {
  /** The event log table. */
  eventsTable: required('SLUICE_EVENTS_TABLE'),
  /** The subscribers table. */
  subscribersTable: required('SLUICE_SUBSCRIBERS_TABLE'),
  /** Days events are kept after they are recorded; the writer checks it (above 30) and defaults to 35. */
  retentionDays: retentionDays(),
} as const;
