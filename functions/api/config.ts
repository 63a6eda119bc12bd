/** Configuration of the API function, read once at load; throws on a missing variable. */
function required(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is not set`);
  return value;
}

export const config = {
  /** The control table: destinations, cursors, runs. */
  controlTable: required('SLUICE_CONTROL_TABLE'),
  /** The KMS key that wraps each destination's data key. */
  kmsKeyId: required('SLUICE_KMS_KEY_ID'),
} as const;
