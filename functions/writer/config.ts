import { z } from 'zod';
import {
  type Env,
  type EventSourceConfig,
  eventSourceConfig,
  eventSourceVariables,
  readEnv,
  requiredVariable,
} from '../env.js';

/**
 * The variables of the writer function: the event source's (the destination is re-read from the control table
 * before every file; hours the event log no longer holds whole are read from the archive), and the KMS key.
 */
export const writerEnvironment = z.object({
  ...eventSourceVariables,
  /** The KMS key the destinations' data keys were generated under. */
  SLUICE_KMS_KEY_ID: requiredVariable,
});

/** Configuration of the writer function. */
export interface WriterConfig extends EventSourceConfig {
  kmsKeyId: string;
}

/** Reads the writer function's configuration; throws naming a missing variable. */
export function readWriterConfig(env: Env): WriterConfig {
  const vars = readEnv(writerEnvironment, env);
  return { ...eventSourceConfig(vars), kmsKeyId: vars.SLUICE_KMS_KEY_ID };
}
