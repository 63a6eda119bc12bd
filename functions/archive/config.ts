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
 * The variables of the archive (compaction) function: the event source's (it reads the event log hour by hour
 * into the archive bucket, and starts a first compaction where the event log's retention ends), and the stage.
 */
export const archiveEnvironment = z.object({
  ...eventSourceVariables,
  /** The deployment stage: the `Stage` dimension of the archive's metrics. */
  SLUICE_STAGE: requiredVariable,
});

/** Configuration of the archive function. */
export interface ArchiveConfig extends EventSourceConfig {
  stage: string;
}

/** Reads the archive function's configuration; throws naming a missing or invalid variable. */
export function readArchiveConfig(env: Env): ArchiveConfig {
  const vars = readEnv(archiveEnvironment, env);
  return { ...eventSourceConfig(vars), stage: vars.SLUICE_STAGE };
}
