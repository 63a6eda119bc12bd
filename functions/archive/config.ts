import { DAY_MS } from '@sluice/core';
import { z } from 'zod';
import { type Env, eventRetentionDaysVariable, readEnv, requiredVariable } from '../env.js';

/** The variables of the archive (compaction) function. */
export const archiveEnvironment = z.object({
  /** The control table: workspaces and the archive cursors. */
  SLUICE_CONTROL_TABLE: requiredVariable,
  /** The event log table, read hour by hour. */
  SLUICE_EVENTS_TABLE: requiredVariable,
  /** The subscribers table (the reader's other table; not archived). */
  SLUICE_SUBSCRIBERS_TABLE: requiredVariable,
  /** The event archive bucket. */
  SLUICE_ARCHIVE_BUCKET: requiredVariable,
  /** How long the event log keeps rows, in days (default 35): where a first compaction starts. */
  SLUICE_EVENT_RETENTION_DAYS: eventRetentionDaysVariable,
  /** The deployment stage: the `Stage` dimension of the archive's metrics. */
  SLUICE_STAGE: requiredVariable,
});

/** Configuration of the archive function. */
export interface ArchiveConfig {
  controlTable: string;
  eventsTable: string;
  subscribersTable: string;
  archiveBucket: string;
  eventRetentionMs: number;
  stage: string;
}

/** Reads the archive function's configuration; throws naming a missing or invalid variable. */
export function readArchiveConfig(env: Env): ArchiveConfig {
  const vars = readEnv(archiveEnvironment, env);
  return {
    controlTable: vars.SLUICE_CONTROL_TABLE,
    eventsTable: vars.SLUICE_EVENTS_TABLE,
    subscribersTable: vars.SLUICE_SUBSCRIBERS_TABLE,
    archiveBucket: vars.SLUICE_ARCHIVE_BUCKET,
    eventRetentionMs: vars.SLUICE_EVENT_RETENTION_DAYS * DAY_MS,
    stage: vars.SLUICE_STAGE,
  };
}
