/**
 * The run-control function: the ClaimAndPlan, Commit and RecordFailure tasks of the ExportRun state machine,
 * dispatched on `action`. Thin: the steps are `@sluice/engine`'s. Errors leave with their classified
 * `name` (the state machine's Retry/Catch match it) and a message safe to show.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { createLogger } from '@sluice/core';
import {
  type ClaimAndPlanInput,
  type CommitInput,
  claimAndPlan,
  commitRun,
  type EngineDeps,
  engineDeps,
  EventBridgeNoticePublisher,
  engineMetrics,
  type MetricsLogger,
  type NoticePublisher,
  powertoolsFailureMetrics,
  powertoolsRunMetrics,
  type RecordFailureInput,
  recordFailure,
} from '@sluice/engine';
import { engineControlStores } from '../control-stores.js';
import { type LambdaFunction, lambdaHandler } from '../lambda.js';
import type { RunControlConfig } from './config.js';

/** The event of each action, as the ExportRun definition builds it. */
export type RunControlEvent =
  | (ClaimAndPlanInput & { action: 'claimAndPlan' })
  | (CommitInput & { action: 'commit' })
  | (RecordFailureInput & { action: 'recordFailure' });

/** The run-control function's handler over the configured stores. */
export function createRunControlFunction(config: RunControlConfig): LambdaFunction<RunControlEvent, unknown> {
  const logger = createLogger();
  // One Powertools instance for the run and failure metrics, flushed by `logMetrics` after each invocation.
  const metrics = engineMetrics({ stage: config.stage, logger: quietWhenNoMetrics(logger) });
  const deps: Partial<EngineDeps> = engineDeps(
    {
      ...engineControlStores(config.controlTable),
      settings: { runBudgetMs: config.runBudgetMs, eventRetentionMs: config.eventRetentionMs },
      metrics: powertoolsRunMetrics({ stage: config.stage, metrics }),
      notices: loggedNotices(new EventBridgeNoticePublisher({ eventBusName: config.eventBusName }), logger),
    },
    ['claimAndPlan', 'commitRun', 'recordFailure'],
  );
  const failureMetrics = powertoolsFailureMetrics({ stage: config.stage, metrics });
  return lambdaHandler<RunControlEvent, unknown>(
    logger,
    async (event) => {
      const run = 'run' in event ? event.run : undefined;
      const ids = run ?? (event as { workspaceId?: string; destinationId?: string });
      logger.appendKeys({
        workspaceId: ids.workspaceId,
        destinationId: ids.destinationId,
        runId: run?.runId,
        action: event.action,
      });
      try {
        switch (event.action) {
          case 'claimAndPlan': {
            const result = await claimAndPlan(event, deps);
            logger.info('claimed and planned', {
              outcome: result.outcome,
              reason: result.reason,
              runId: result.run?.runId,
              items: result.items?.length ?? 0,
            });
            return result;
          }
          case 'commit': {
            const result = await commitRun(event, deps);
            if (result.status === 'failed') {
              // A writer's failure is recorded by Commit (after committing the windows written), not RecordFailure.
              const failed = event.results?.find((r) => r.status === 'failed');
              failureMetrics.recordFailure(failed && 'error' in failed ? failed.error?.Error : undefined);
            }
            logger.info('committed', { ...result, windows: event.results?.length ?? 0 });
            return result;
          }
          case 'recordFailure': {
            const result = await recordFailure(event, deps);
            failureMetrics.recordFailure(event.error?.Error);
            logger.warn('run failed', { error: event.error?.Error, ...result });
            return result;
          }
          default:
            throw new Error(`unknown action ${String((event as { action?: unknown }).action)}`);
        }
      } catch (error) {
        logger.error('run-control failed', {
          errorName: (error as Error).name,
          errorMessage: (error as Error).message,
        });
        throw error;
      }
    },
    logMetrics(metrics),
  );
}

/**
 * Powertools' warnings to `logger`, except "No application metrics to publish": most tasks record no metric,
 * and `logMetrics` would say so at warn level after each one. That one goes to debug.
 */
function quietWhenNoMetrics(logger: Logger): MetricsLogger {
  return {
    debug: (message: unknown) => logger.debug(String(message)),
    info: (message: unknown) => logger.info(String(message)),
    error: (message: unknown) => logger.error(String(message)),
    warn: (message: unknown) =>
      String(message).startsWith('No application metrics to publish')
        ? logger.debug(String(message))
        : logger.warn(String(message)),
  };
}

/** Publishes through `bus`, logging each notice published or not (a failed one stays pending and throws). */
function loggedNotices(bus: NoticePublisher, logger: Logger): NoticePublisher {
  return {
    async publish(notice) {
      try {
        await bus.publish(notice);
        logger.info('destination notice published', { noticeId: notice.id, kind: notice.kind });
      } catch (error) {
        // Kept pending on the destination; the next outcome recorded for it publishes it again.
        logger.error('destination notice not published', {
          noticeId: notice.id,
          kind: notice.kind,
          errorName: (error as Error).name,
          errorMessage: (error as Error).message,
        });
        throw error;
      }
    },
  };
}
