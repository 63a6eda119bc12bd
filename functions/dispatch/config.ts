/** Configuration of the dispatch function, read once at load; throws on a missing variable. */
function required(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is not set`);
  return value;
}

export const config = {
  /** The control table and its due index. */
  controlTable: required('SLUICE_CONTROL_TABLE'),
  /** The event log table: one cheap Query per dataset looks for new rows. */
  eventsTable: required('SLUICE_EVENTS_TABLE'),
  /** The subscribers table. */
  subscribersTable: required('SLUICE_SUBSCRIBERS_TABLE'),
} as const;
