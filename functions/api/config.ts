import { z } from 'zod';
import { type Env, readEnv, requiredVariable } from '../env.js';

/** The variables of the API function. */
export const apiEnvironment = z.object({
  /** The control table: destinations, cursors, runs. */
  SLUICE_CONTROL_TABLE: requiredVariable,
  /** The KMS key that wraps each destination's data key. */
  SLUICE_KMS_KEY_ID: requiredVariable,
});

/** Configuration of the API function. */
export interface ApiConfig {
  controlTable: string;
  kmsKeyId: string;
}

/** Reads the API function's configuration; throws naming a missing variable. */
export function readApiConfig(env: Env): ApiConfig {
  const vars = readEnv(apiEnvironment, env);
  return { controlTable: vars.SLUICE_CONTROL_TABLE, kmsKeyId: vars.SLUICE_KMS_KEY_ID };
}
