import { DAY_MS } from '@sluice/core';
import { z } from 'zod';
import { type Env, eventRetentionDaysVariable, readEnv, requiredVariable } from '../env.js';

/** The variables of the dispatch function. */
export const dispatchEnvironment = z.object({
  /** The control table and its due index. */
  SLUICE_CONTROL_TABLE: requiredVariable,
  /** The event log table: one cheap Query per dataset looks for new rows. */
  SLUICE_EVENTS_TABLE: requiredVariable,
  /** The subscribers table. */
  SLUICE_SUBSCRIBERS_TABLE: requiredVariable,
  /** The event archive bucket: an export behind the event log has rows there. */
  SLUICE_ARCHIVE_BUCKET: requiredVariable,
  /** How long the event log keeps rows, in days (default 35; fractions in tests). */
  SLUICE_EVENT_RETENTION_DAYS: eventRetentionDaysVariable,
});

/** Configuration of the dispatch function. */
export interface DispatchConfig {
  controlTable: string;
  eventsTable: string;
  subscribersTable: string;
  archiveBucket: string;
  eventRetentionMs: number;
}

/** Reads the dispatch function's configuration; throws naming a missing variable. */
export function readDispatchConfig(env: Env): DispatchConfig {
  const vars = readEnv(dispatchEnvironment, env);
  return {
    controlTable: vars.SLUICE_CONTROL_TABLE,
    eventsTable: vars.SLUICE_EVENTS_TABLE,
    subscribersTable: vars.SLUICE_SUBSCRIBERS_TABLE,
    archiveBucket: vars.SLUICE_ARCHIVE_BUCKET,
    eventRetentionMs: vars.SLUICE_EVENT_RETENTION_DAYS * DAY_MS,
  };
}
