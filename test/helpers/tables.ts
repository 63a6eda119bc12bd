/**
 * The tables and key of the global setup's local services, as constructor options: tests are entry points,
 * so they read the variables `test/global-setup.ts` sets, once, here.
 */
function variable(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the tests through vitest (its global setup sets it)`);
  return value;
}

/** `{ tableName }` of the control table. */
export const controlTable = { tableName: variable('SLUICE_CONTROL_TABLE') };

/** `{ eventsTable, subscribersTable }` of the event log. */
export const eventTables = {
  eventsTable: variable('SLUICE_EVENTS_TABLE'),
  subscribersTable: variable('SLUICE_SUBSCRIBERS_TABLE'),
};

/** `{ keyId }` of the local KMS key. */
export const kmsKey = { keyId: variable('SLUICE_KMS_KEY_ID') };

/** The local s3rver's origin, the only endpoint tests exempt from the endpoint rules. */
export const localBucketOrigins: ReadonlySet<string> = new Set([
  new URL(variable('SLUICE_LOCAL_S3_ENDPOINT')).origin,
]);
