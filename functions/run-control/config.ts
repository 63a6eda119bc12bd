/** Configuration of the run-control function, read once at load; throws on a missing variable. */
function required(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is not set`);
  return value;
}

export const config = {
  /** The control table: destinations, cursors, leases, runs. */
  controlTable: required('SLUICE_CONTROL_TABLE'),
} as const;
