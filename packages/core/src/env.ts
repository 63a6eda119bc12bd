/**
 * Reads a required environment variable, for the functions' config modules (read once at load).
 * @throws Error naming the variable when it is missing or empty: configuration fails fast.
 */
export function requiredEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is not set`);
  return value;
}

/**
 * Reads a required whole number from 1, for limits that must never be switched off by a typo.
 * @throws Error naming the variable when it is missing, empty or not a whole number from 1.
 */
export function requiredPositiveIntegerEnv(name: string): number {
  const value = requiredEnv(name);
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1)
    throw new Error(`${name} must be a whole number from 1, got ${value}`);
  return number;
}

/**
 * Reads an optional positive number from the environment (fractions allowed: tests use short budgets and
 * retentions), or `fallback` when unset.
 * @throws Error naming the variable when it is set but not a positive number.
 */
export function optionalPositiveNumberEnv(name: string, fallback: number): number {
  const value = process.env[name];
  if (value === undefined || value === '') return fallback;
  const number = Number(value);
  if (!Number.isFinite(number) || number <= 0)
    throw new Error(`${name} must be a positive number, got ${value}`);
  return number;
}

/** The CloudWatch namespace of every Sluice metric (Powertools `POWERTOOLS_METRICS_NAMESPACE` in the functions). */
export const SLUICE_METRICS_NAMESPACE = 'Sluice';
