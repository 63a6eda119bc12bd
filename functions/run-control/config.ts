import { DEFAULT_ENGINE_SETTINGS } from '@sluice/engine';
import { optionalPositiveNumberEnv, requiredEnv } from '@sluice/core';

/** Configuration of the run-control function, read once at load; throws on a missing or invalid variable. */
export const config = {
  /** The control table: destinations, cursors, leases, runs. */
  controlTable: requiredEnv('SLUICE_CONTROL_TABLE'),
  /**
   * The run's time budget (`SLUICE_RUN_BUDGET_SECONDS`, default 180): writers start no file after it, so a
   * run ends well inside an Express execution's 5 minutes; what is left continues in the next run.
   */
  runBudgetMs:
    optionalPositiveNumberEnv('SLUICE_RUN_BUDGET_SECONDS', DEFAULT_ENGINE_SETTINGS.runBudgetMs / 1000) * 1000,
  /** How long the event log keeps rows (`SLUICE_EVENT_RETENTION_DAYS`, default 35): older unexported rows are reported lost. */
  eventRetentionMs:
    optionalPositiveNumberEnv(
      'SLUICE_EVENT_RETENTION_DAYS',
      DEFAULT_ENGINE_SETTINGS.eventRetentionMs / 86_400_000,
    ) * 86_400_000,
  /** The deployment stage: the `Stage` dimension of the engine's metrics. */
  stage: requiredEnv('SLUICE_STAGE'),
  /** The Sluice bus: where a destination's failing and recovered notices are published. */
  eventBusName: requiredEnv('SLUICE_EVENT_BUS_NAME'),
} as const;
