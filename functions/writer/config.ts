/** Configuration of the writer function, read once at load; throws on a missing variable. */
function required(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is not set`);
  return value;
}

export const config = {
  /** The control table: the destination is re-read before every file. */
  controlTable: required('SLUICE_CONTROL_TABLE'),
  /** The event log table. */
  eventsTable: required('SLUICE_EVENTS_TABLE'),
  /** The subscribers table. */
  subscribersTable: required('SLUICE_SUBSCRIBERS_TABLE'),
  /** The KMS key the destinations' data keys were generated under. */
  kmsKeyId: required('SLUICE_KMS_KEY_ID'),
} as const;
