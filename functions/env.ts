/**
 * Reading a function's environment: each entry point's `config.ts` declares its variables as a zod object, and
 * its `handler.ts` reads them once, at load, with {@link readEnv}. No package reads `process.env`.
 */
import { DAY_MS } from '@sluice/core';
import { z } from 'zod';

/** The environment as a function sees it. */
export type Env = Readonly<Record<string, string | undefined>>;

/** A variable that must be set and not empty. */
export const requiredVariable = z.string({ error: 'is not set' }).min(1, { error: 'is not set' });

/** A required whole number from 1, for limits that must never be switched off by a typo. */
export const positiveIntegerVariable = z
  .string({ error: 'is not set' })
  .min(1, { error: 'is not set' })
  .transform((value, context) => {
    const number = Number(value);
    if (!Number.isInteger(number) || number < 1) {
      context.addIssue({ code: 'custom', message: `must be a whole number from 1, got ${value}` });
      return z.NEVER;
    }
    return number;
  });

/**
 * An optional positive number (fractions allowed: tests use short budgets), `fallback` when unset or empty.
 */
export function positiveNumberVariable(fallback: number) {
  return z
    .string()
    .optional()
    .transform((value, context) => {
      if (value === undefined || value === '') return fallback;
      const number = Number(value);
      if (!Number.isFinite(number) || number <= 0) {
        context.addIssue({ code: 'custom', message: `must be a positive number, got ${value}` });
        return z.NEVER;
      }
      return number;
    });
}

/**
 * Validates `env` against `schema` (only its own keys are read) and returns the parsed variables.
 * @throws Error naming every variable that is missing or invalid (`SLUICE_KMS_KEY_ID is not set`)
 */
export function readEnv<Shape extends z.ZodRawShape>(
  schema: z.ZodObject<Shape>,
  env: Env,
): z.infer<z.ZodObject<Shape>> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const problems = result.error.issues.map(
    (issue) => `${String(issue.path[0] ?? 'environment')} ${issue.message}`,
  );
  throw new Error(problems.join('; '));
}

/** `SLUICE_EVENT_RETENTION_DAYS`: days the event log keeps a row, 35 when unset (fractions allowed: tests use minutes). */
export const eventRetentionDaysVariable = positiveNumberVariable(35);

/**
 * The variables of the functions that read events (dispatch, writer, archive): the control table (archive
 * cursors), the event log's tables, the event archive bucket, and how long the event log keeps rows.
 */
export const eventSourceVariables = {
  SLUICE_CONTROL_TABLE: requiredVariable,
  SLUICE_EVENTS_TABLE: requiredVariable,
  SLUICE_SUBSCRIBERS_TABLE: requiredVariable,
  SLUICE_ARCHIVE_BUCKET: requiredVariable,
  SLUICE_EVENT_RETENTION_DAYS: eventRetentionDaysVariable,
};

/** The tables, bucket and retention behind the export engine's event source. */
export interface EventSourceConfig {
  controlTable: string;
  eventsTable: string;
  subscribersTable: string;
  archiveBucket: string;
  eventRetentionMs: number;
}

/** The event source's configuration from variables read with {@link eventSourceVariables}. */
export function eventSourceConfig(
  vars: z.infer<z.ZodObject<typeof eventSourceVariables>>,
): EventSourceConfig {
  return {
    controlTable: vars.SLUICE_CONTROL_TABLE,
    eventsTable: vars.SLUICE_EVENTS_TABLE,
    subscribersTable: vars.SLUICE_SUBSCRIBERS_TABLE,
    archiveBucket: vars.SLUICE_ARCHIVE_BUCKET,
    eventRetentionMs: vars.SLUICE_EVENT_RETENTION_DAYS * DAY_MS,
  };
}
