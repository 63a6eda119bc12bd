/**
 * Reads a required environment variable, for the functions' config modules (read once at load).
 * @throws Error naming the variable when it is missing or empty: configuration fails fast.
 */
export function requiredEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is not set`);
  return value;
}

/** The CloudWatch namespace of every Sluice metric (Powertools `POWERTOOLS_METRICS_NAMESPACE` in the functions). */
export const SLUICE_METRICS_NAMESPACE = 'Sluice';
