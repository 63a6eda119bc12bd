import { z } from 'zod';
import {
  type Env,
  type EventSourceConfig,
  eventSourceConfig,
  eventSourceVariables,
  readEnv,
} from '../env.js';

/**
 * The variables of the dispatch function: the event source's (the control table and its due index; one cheap
 * Query per dataset looks for new rows; an export behind the event log has rows in the archive).
 */
export const dispatchEnvironment = z.object(eventSourceVariables);

/** Configuration of the dispatch function. */
export type DispatchConfig = EventSourceConfig;

/** Reads the dispatch function's configuration; throws naming a missing variable. */
export function readDispatchConfig(env: Env): DispatchConfig {
  return eventSourceConfig(readEnv(dispatchEnvironment, env));
}
