import { DAY_MS } from '@sluice/core';
import { z } from 'zod';
import { type Env, eventRetentionDaysVariable, readEnv, requiredVariable } from '../env.js';

/** The variables of the writer function. */
export const writerEnvironment = z.object({
  /** The control table: the destination is re-read before every file. */
  SLUICE_CONTROL_TABLE: requiredVariable,
  /** The event log table. */
  SLUICE_EVENTS_TABLE: requiredVariable,
  /** The subscribers table. */
  SLUICE_SUBSCRIBERS_TABLE: requiredVariable,
  /** The KMS key the destinations' data keys were generated under. */
  SLUICE_KMS_KEY_ID: requiredVariable,
  /** The event archive bucket: hours the event log no longer holds whole are read from it. */
  SLUICE_ARCHIVE_BUCKET: requiredVariable,
  /** How long the event log keeps rows, in days (default 35; fractions in tests). */
  SLUICE_EVENT_RETENTION_DAYS: eventRetentionDaysVariable,
});

/** Configuration of the writer function. */
export interface WriterConfig {
  controlTable: string;
  eventsTable: string;
  subscribersTable: string;
  kmsKeyId: string;
  archiveBucket: string;
  eventRetentionMs: number;
}

/** Reads the writer function's configuration; throws naming a missing variable. */
export function readWriterConfig(env: Env): WriterConfig {
  const vars = readEnv(writerEnvironment, env);
  return {
    controlTable: vars.SLUICE_CONTROL_TABLE,
    eventsTable: vars.SLUICE_EVENTS_TABLE,
    subscribersTable: vars.SLUICE_SUBSCRIBERS_TABLE,
    kmsKeyId: vars.SLUICE_KMS_KEY_ID,
    archiveBucket: vars.SLUICE_ARCHIVE_BUCKET,
    eventRetentionMs: vars.SLUICE_EVENT_RETENTION_DAYS * DAY_MS,
  };
}
