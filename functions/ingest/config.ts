import { parseEventRetentionDays } from '@sluice/eventlog';
import { z } from 'zod';
import { type Env, readEnv, requiredVariable } from '../env.js';

/** The variables of the ingest function. */
export const ingestEnvironment = z.object({
  /** The event log table. */
  SLUICE_EVENTS_TABLE: requiredVariable,
  /** The subscribers table. */
  SLUICE_SUBSCRIBERS_TABLE: requiredVariable,
  /** The control table: rejected rows and envelopes are kept there. */
  SLUICE_CONTROL_TABLE: requiredVariable,
  /** The deployment stage: the `Stage` dimension of the ingest metrics. */
  SLUICE_STAGE: z.string().optional(),
  /** The ingest dead-letter queue: bus events of the buffer given up after their attempts go there. */
  SLUICE_INGEST_DEAD_LETTER_QUEUE_URL: z.string().optional(),
  /** Days events are kept after they are recorded: a whole number from 1, else 35 days. */
  SLUICE_EVENT_RETENTION_DAYS: z.string().optional(),
});

/** Configuration of the ingest function. */
export interface IngestConfig {
  eventsTable: string;
  subscribersTable: string;
  controlTable: string;
  stage?: string;
  /** The ingest dead-letter queue's URL (absent: a bus event given up fails its batch instead). */
  deadLetterQueueUrl?: string;
  /** Seconds events are kept after they are recorded. */
  retentionSeconds: number;
}

/** Reads the ingest function's configuration; throws naming a missing or invalid variable. */
export function readIngestConfig(env: Env): IngestConfig {
  const vars = readEnv(ingestEnvironment, env);
  return {
    eventsTable: vars.SLUICE_EVENTS_TABLE,
    subscribersTable: vars.SLUICE_SUBSCRIBERS_TABLE,
    controlTable: vars.SLUICE_CONTROL_TABLE,
    ...(vars.SLUICE_STAGE ? { stage: vars.SLUICE_STAGE } : {}),
    ...(vars.SLUICE_INGEST_DEAD_LETTER_QUEUE_URL
      ? { deadLetterQueueUrl: vars.SLUICE_INGEST_DEAD_LETTER_QUEUE_URL }
      : {}),
    retentionSeconds: parseEventRetentionDays(vars.SLUICE_EVENT_RETENTION_DAYS),
  };
}
