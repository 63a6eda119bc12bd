import { DAY_MS } from '@sluice/core';
import { DEFAULT_ENGINE_SETTINGS } from '@sluice/engine';
import { z } from 'zod';
import {
  type Env,
  eventRetentionDaysVariable,
  positiveNumberVariable,
  readEnv,
  requiredVariable,
} from '../env.js';

/** The variables of the run-control function. */
export const runControlEnvironment = z.object({
  /** The control table: destinations, cursors, leases, runs. */
  SLUICE_CONTROL_TABLE: requiredVariable,
  /**
   * The run's time budget in seconds (default 180): writers start no file after it, so a run ends well inside
   * an Express execution's 5 minutes; what is left continues in the next run.
   */
  SLUICE_RUN_BUDGET_SECONDS: positiveNumberVariable(DEFAULT_ENGINE_SETTINGS.runBudgetMs / 1000),
  /** How long the event log keeps rows, in days (default 35): older unexported rows are reported lost. */
  SLUICE_EVENT_RETENTION_DAYS: eventRetentionDaysVariable,
  /** The deployment stage: the `Stage` dimension of the engine's metrics. */
  SLUICE_STAGE: requiredVariable,
  /** The Sluice bus: where a destination's failing and recovered notices are published. */
  SLUICE_EVENT_BUS_NAME: requiredVariable,
});

/** Configuration of the run-control function. */
export interface RunControlConfig {
  controlTable: string;
  runBudgetMs: number;
  eventRetentionMs: number;
  stage: string;
  eventBusName: string;
}

/** Reads the run-control function's configuration; throws naming a missing or invalid variable. */
export function readRunControlConfig(env: Env): RunControlConfig {
  const vars = readEnv(runControlEnvironment, env);
  return {
    controlTable: vars.SLUICE_CONTROL_TABLE,
    runBudgetMs: vars.SLUICE_RUN_BUDGET_SECONDS * 1000,
    eventRetentionMs: vars.SLUICE_EVENT_RETENTION_DAYS * DAY_MS,
    stage: vars.SLUICE_STAGE,
    eventBusName: vars.SLUICE_EVENT_BUS_NAME,
  };
}
