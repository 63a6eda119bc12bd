import { z } from 'zod';
import { type Env, readEnv, requiredVariable } from '../env.js';

/** The variables of the dispatch function. */
export const dispatchEnvironment = z.object({
  /** The control table and its due index. */
  SLUICE_CONTROL_TABLE: requiredVariable,
  /** The event log table: one cheap Query per dataset looks for new rows. */
  SLUICE_EVENTS_TABLE: requiredVariable,
  /** The subscribers table. */
  SLUICE_SUBSCRIBERS_TABLE: requiredVariable,
});

/** Configuration of the dispatch function. */
export interface DispatchConfig {
  controlTable: string;
  eventsTable: string;
  subscribersTable: string;
}

/** Reads the dispatch function's configuration; throws naming a missing variable. */
export function readDispatchConfig(env: Env): DispatchConfig {
  const vars = readEnv(dispatchEnvironment, env);
  return {
    controlTable: vars.SLUICE_CONTROL_TABLE,
    eventsTable: vars.SLUICE_EVENTS_TABLE,
    subscribersTable: vars.SLUICE_SUBSCRIBERS_TABLE,
  };
}
