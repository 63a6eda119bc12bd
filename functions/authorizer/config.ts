import { z } from 'zod';
import { type Env, readEnv, requiredVariable } from '../env.js';

/** The variables of the authorizer function. */
export const authorizerEnvironment = z.object({
  /** The control table holding API keys (by SHA-256). */
  SLUICE_CONTROL_TABLE: requiredVariable,
});

/** Configuration of the authorizer function. */
export interface AuthorizerConfig {
  controlTable: string;
}

/** Reads the authorizer's configuration; throws naming a missing variable. */
export function readAuthorizerConfig(env: Env): AuthorizerConfig {
  return { controlTable: readEnv(authorizerEnvironment, env).SLUICE_CONTROL_TABLE };
}
