import { ARCHIVE_SERVICE } from '@sluice/archive';
import { EVENT_DATASETS } from '@sluice/core';
import { ENGINE_SERVICE, METRICS_NAMESPACE, STAGE_DIMENSION } from '@sluice/engine';
import { INGEST_METRICS, INGEST_SERVICE } from '@sluice/eventlog';
import { Duration, Validations } from 'aws-cdk-lib';
import type * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';

export { METRICS_NAMESPACE };
/** The engine's export lag metric: now minus `exportedThrough`, per dataset, in seconds. */
export const EXPORT_LAG_METRIC = 'ExportLagSeconds';
/** The engine's count of failed runs, per `Cause` (`destination` or `sluice`). */
export const RUNS_FAILED_METRIC = 'RunsFailed';

/** A table whose throttles alarm, with the global secondary indexes it has (each throttles on its own). */
export interface WatchedTable {
  readonly table: dynamodb.ITable;
  readonly indexes: readonly string[];
}

/** Properties of {@link SluiceObservability}. */
export interface SluiceObservabilityProps {
  /** Names the dashboard; the `Stage` dimension of the engine metrics. */
  readonly stage: string;
  /** Subscribed to the alarm topic when given. */
  readonly alarmEmail?: string;
  /** The export workflow: its failed, timed-out and aborted executions alarm. */
  readonly exportRun: sfn.IStateMachine;
  /** The scheduler: if it fails, nothing exports. */
  readonly dispatch: sfn.IStateMachine;
  /** Tables whose throttled reads and writes, on the table and on each index, alarm. */
  readonly tables: Readonly<Record<string, WatchedTable>>;
  /** The ingest function: its errors alarm (each is a retry; the third sends the event to the queue). */
  readonly ingestFunction: lambda.IFunction;
  /** Every function, for the dashboard. */
  readonly functions: Readonly<Record<string, lambda.IFunction>>;
  /** The HTTP API: its 5xx alarm. */
  readonly httpApi: apigwv2.IHttpApi;
  /** Bus events ingestion could not write (function failures) or EventBridge could not deliver. */
  readonly ingestDeadLetterQueue: sqs.IQueue;
  /** Export lag, in minutes, over which the lag alarm fires. */
  readonly exportLagAlarmMinutes: number;
  /** Ingest lag and async event age, in minutes, over which their alarms fire. */
  readonly ingestLagAlarmMinutes: number;
  /** Rejected rows and envelopes in 5 minutes, all workspaces, at which the alarm fires. */
  readonly rejectedEventsAlarmThreshold: number;
  /** The event archive's compaction function and the lag (seconds) its alarm fires over. */
  readonly archive: { readonly function: lambda.IFunction; readonly lagAlarmSeconds: number };
}

/** Seconds the oldest dead letter may wait before its alarm: 3 of the queue's 14 days, 11 left to redrive. */
export const DEAD_LETTER_AGE_ALARM_SECONDS = 3 * 86_400;

/** One ingest metric of a stage, all workspaces (the dimensions `service` and `Stage`). */
export function ingestMetric(
  metricName: string,
  props: { stage: string; statistic: string; period: Duration; label?: string },
): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: METRICS_NAMESPACE,
    metricName,
    dimensionsMap: { service: INGEST_SERVICE, [STAGE_DIMENSION]: props.stage },
    statistic: props.statistic,
    period: props.period,
    label: props.label,
  });
}

/** One engine metric of a stage, with the dimensions the engine publishes it under. */
export function engineMetric(
  metricName: string,
  props: {
    stage: string;
    statistic: string;
    period: Duration;
    dataset?: string;
    cause?: 'destination' | 'sluice';
    label?: string;
  },
): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: METRICS_NAMESPACE,
    metricName,
    dimensionsMap: {
      service: ENGINE_SERVICE,
      [STAGE_DIMENSION]: props.stage,
      ...(props.dataset === undefined ? {} : { Dataset: props.dataset }),
      ...(props.cause === undefined ? {} : { Cause: props.cause }),
    },
    statistic: props.statistic,
    period: props.period,
    label: props.label,
  });
}

/**
 * The alarm topic, the alarms and the dashboard. Each alarm notifies the topic when it fires and when it
 * recovers; `docs/runbook.md` says what each one means and what to do.
 */
export class SluiceObservability extends Construct {
  /** Alarm notifications (and recoveries). */
  public readonly alarmTopic: sns.Topic;
  /** Every alarm, by construct id. */
  public readonly alarms: Readonly<Record<string, cloudwatch.Alarm>>;
  /** The operations dashboard. */
  public readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: SluiceObservabilityProps) {
    super(scope, id);
    const fiveMinutes = Duration.minutes(5);

    this.alarmTopic = new sns.Topic(this, 'AlarmTopic', {
      displayName: `Sluice ${props.stage} alarms`,
      enforceSSL: true,
    });
    Validations.of(this.alarmTopic).acknowledge({
      id: 'AwsSolutions-SNS2',
      reason:
        'Alarm notifications carry alarm names and metric values only, no customer data. CloudWatch cannot ' +
        'publish to a topic under the AWS-managed SNS key, and a customer-managed key would protect nothing.',
    });
    if (props.alarmEmail) {
      this.alarmTopic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
    }

    const { stage } = props;
    const sum = { period: fiveMinutes, statistic: 'Sum' } as const;

    const throttleMetrics: Record<string, cloudwatch.IMetric> = {};
    let n = 0;
    for (const { table, indexes } of Object.values(props.tables)) {
      for (const metricName of ['ReadThrottleEvents', 'WriteThrottleEvents']) {
        throttleMetrics[`t${n++}`] = table.metric(metricName, sum);
        for (const index of indexes) {
          throttleMetrics[`t${n++}`] = table.metric(metricName, {
            ...sum,
            dimensionsMap: { TableName: table.tableName, GlobalSecondaryIndexName: index },
          });
        }
      }
    }
    const throttles = new cloudwatch.MathExpression({
      expression: Object.keys(throttleMetrics).join(' + '),
      usingMetrics: throttleMetrics,
      period: fiveMinutes,
      label: 'Throttled DynamoDB requests (tables and indexes)',
    });

    // The median run's lag, per event dataset: one destination far behind (a customer's broken bucket, a
    // catch-up) does not move it; many destinations behind do.
    const medianLagByDataset = EVENT_DATASETS.map((dataset) =>
      engineMetric(EXPORT_LAG_METRIC, {
        stage,
        statistic: 'p50',
        period: fiveMinutes,
        dataset,
        label: dataset,
      }),
    );
    const widespreadLag = new cloudwatch.MathExpression({
      expression: `MAX([${medianLagByDataset.map((_, i) => `lag${i}`).join(', ')}])`,
      usingMetrics: Object.fromEntries(medianLagByDataset.map((metric, i) => [`lag${i}`, metric])),
      period: fiveMinutes,
      label: 'Median export lag of runs, worst dataset (s)',
    });
    // Rows that left the event log before an export wrote them (the engine reports the span lost, in seconds
    // of recorded time): each is data a customer will never get, whoever caused the pause or the failure.
    const expiredUnexported = new cloudwatch.MathExpression({
      expression: `SUM([${EVENT_DATASETS.map((_, i) => `expired${i}`).join(', ')}])`,
      usingMetrics: Object.fromEntries(
        EVENT_DATASETS.map((dataset, i) => [
          `expired${i}`,
          engineMetric('ExpiredUnexportedSeconds', { stage, statistic: 'Sum', period: fiveMinutes, dataset }),
        ]),
      ),
      period: fiveMinutes,
      label: 'Recorded time expired unexported (s)',
    });
    const worstLagByDataset = EVENT_DATASETS.map((dataset) =>
      engineMetric(EXPORT_LAG_METRIC, {
        stage,
        statistic: 'Maximum',
        period: fiveMinutes,
        dataset,
        label: dataset,
      }),
    );

    const failedRuns = (cause: 'destination' | 'sluice') =>
      engineMetric(RUNS_FAILED_METRIC, { stage, ...sum, cause, label: `failed: ${cause}` });
    const runsTimedOut = new cloudwatch.MathExpression({
      expression: 'timedOut + aborted',
      usingMetrics: {
        timedOut: props.exportRun.metricTimedOut(sum),
        aborted: props.exportRun.metricAborted(sum),
      },
      period: fiveMinutes,
    });
    const dispatchProblems = new cloudwatch.MathExpression({
      expression: 'failed + timedOut + aborted',
      usingMetrics: {
        failed: props.dispatch.metricFailed(sum),
        timedOut: props.dispatch.metricTimedOut(sum),
        aborted: props.dispatch.metricAborted(sum),
      },
      period: fiveMinutes,
    });

    const apiServerErrors = props.httpApi.metricServerError(sum);
    const deadLetters = props.ingestDeadLetterQueue.metricApproximateNumberOfMessagesVisible({
      period: fiveMinutes,
      statistic: 'Maximum',
    });
    const alarm = cloudwatch.ComparisonOperator;
    const missing = cloudwatch.TreatMissingData;

    // Pages are for Sluice's own failures. A customer's revoked key or deleted bucket fails only that
    // destination: the engine counts it as RunsFailed{Cause=destination} (dashboard, not paged) and the
    // destination shows it (status failed, lastError) until the customer fixes it.
    const alarms: Record<string, cloudwatch.Alarm> = {
      SluiceRunFailures: failedRuns('sluice').createAlarm(this, 'SluiceRunFailures', {
        alarmDescription:
          "Export runs failed for Sluice's own reasons (database, KMS, timeouts, unclassified errors) in 2 of " +
          'the last 3 five-minute periods. Customer-caused failures are not counted. See docs/runbook.md.',
        threshold: 1,
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
        comparisonOperator: alarm.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: missing.NOT_BREACHING,
      }),
      ExportRunTimeouts: runsTimedOut.createAlarm(this, 'ExportRunTimeouts', {
        alarmDescription:
          'ExportRun executions timed out or were aborted: they end without recording a failure. See docs/runbook.md.',
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: alarm.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: missing.NOT_BREACHING,
      }),
      DispatchFailures: dispatchProblems.createAlarm(this, 'DispatchFailures', {
        alarmDescription: 'The dispatcher failed twice in 5 minutes: no export starts while it fails.',
        threshold: 2,
        evaluationPeriods: 1,
        comparisonOperator: alarm.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: missing.NOT_BREACHING,
      }),
      DispatchNotRunning: props.dispatch.metricSucceeded(sum).createAlarm(this, 'DispatchNotRunning', {
        alarmDescription:
          'No Dispatch execution succeeded for 10 minutes (it should every minute): the schedule is off, ' +
          'failing or throttled, and no export starts. No data at all counts as not running.',
        threshold: 1,
        evaluationPeriods: 2,
        comparisonOperator: alarm.LESS_THAN_THRESHOLD,
        treatMissingData: missing.BREACHING,
      }),
      DynamoDbThrottles: throttles.createAlarm(this, 'DynamoDbThrottles', {
        alarmDescription:
          'DynamoDB throttled 10 or more requests in 5 minutes on a Sluice table or index (the due index included).',
        threshold: 10,
        evaluationPeriods: 1,
        comparisonOperator: alarm.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: missing.NOT_BREACHING,
      }),
      ApiServerErrors: apiServerErrors.createAlarm(this, 'ApiServerErrors', {
        alarmDescription: 'The Data Exports API answered 5 or more 5xx responses in 5 minutes.',
        threshold: 5,
        evaluationPeriods: 1,
        comparisonOperator: alarm.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: missing.NOT_BREACHING,
      }),
      ExportLag: widespreadLag.createAlarm(this, 'ExportLag', {
        alarmDescription:
          `The median export run was more than ${props.exportLagAlarmMinutes} minutes behind for 15 minutes ` +
          '(many destinations lagging, not one).',
        threshold: props.exportLagAlarmMinutes * 60,
        evaluationPeriods: 3,
        comparisonOperator: alarm.GREATER_THAN_THRESHOLD,
        treatMissingData: missing.NOT_BREACHING,
      }),
      ExpiredUnexportedRows: expiredUnexported.createAlarm(this, 'ExpiredUnexportedRows', {
        alarmDescription:
          'Rows left the event log before an export wrote them: an export was paused or failing for longer ' +
          'than the event log retention. The run records and lastError of the destination name the span lost.',
        threshold: 0,
        evaluationPeriods: 1,
        comparisonOperator: alarm.GREATER_THAN_THRESHOLD,
        treatMissingData: missing.NOT_BREACHING,
      }),
      IngestErrors: props.ingestFunction.metricErrors(sum).createAlarm(this, 'IngestErrors', {
        alarmDescription:
          'The ingest function failed in 2 of the last 3 five-minute periods. Each failure is retried twice; ' +
          'then the bus event goes to the ingest dead-letter queue.',
        threshold: 1,
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
        comparisonOperator: alarm.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: missing.NOT_BREACHING,
      }),
      IngestDeadLetters: deadLetters.createAlarm(this, 'IngestDeadLetters', {
        alarmDescription:
          'Bus events that ingestion could not write are waiting in the ingest dead-letter queue: ' +
          'fix the cause, then run `sluice events redrive` (docs/runbook.md).',
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: alarm.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: missing.NOT_BREACHING,
      }),
    };
    Object.assign(alarms, this.ingestAlarms(props));
    // The compaction publishes its lag and failures once per run (every 15 minutes); no data for an hour
    // means it is not running, which is as bad as lagging.
    const archiveMetric = (metricName: string, statistic: string) =>
      new cloudwatch.Metric({
        namespace: METRICS_NAMESPACE,
        metricName,
        dimensionsMap: { service: ARCHIVE_SERVICE, [STAGE_DIMENSION]: stage },
        statistic,
        period: Duration.hours(1),
      });
    alarms.ArchiveLag = archiveMetric('ArchiveLagSeconds', 'Maximum').createAlarm(this, 'ArchiveLag', {
      alarmDescription:
        `The event archive is more than ${props.archive.lagAlarmSeconds / 3_600} hours behind the event log, or ` +
        'its compaction did not run for an hour: rows expire from the event log unarchived once the lag ' +
        'passes its retention. See docs/deploy.md, "Event archive".',
      threshold: props.archive.lagAlarmSeconds,
      evaluationPeriods: 1,
      comparisonOperator: alarm.GREATER_THAN_THRESHOLD,
      treatMissingData: missing.BREACHING,
    });
    const archiveFailures = new cloudwatch.MathExpression({
      expression: 'failed + errors',
      usingMetrics: {
        failed: archiveMetric('ArchiveFailures', 'Sum').with({ period: fiveMinutes }),
        errors: props.archive.function.metricErrors(sum),
      },
      period: fiveMinutes,
      label: 'Archive compactions failed (datasets, function errors)',
    });
    alarms.ArchiveFailures = archiveFailures.createAlarm(this, 'ArchiveFailures', {
      alarmDescription:
        'The event archive compaction failed (a dataset, or the whole function). It retries every 15 minutes ' +
        'from its cursor; the function log names the workspace, dataset and error.',
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: alarm.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: missing.NOT_BREACHING,
    });
    const notify = new actions.SnsAction(this.alarmTopic);
    for (const alarm of Object.values(alarms)) {
      alarm.addAlarmAction(notify);
      alarm.addOkAction(notify);
    }
    this.alarms = alarms;

    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      dashboardName: `Sluice-${props.stage}`,
      defaultInterval: Duration.hours(6),
    });
    const fns = Object.entries(props.functions);
    this.dashboard.addWidgets(
      new cloudwatch.AlarmStatusWidget({
        title: 'Alarms',
        alarms: Object.values(alarms),
        width: 24,
        height: 3,
      }),
    );
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Export runs',
        left: [
          props.exportRun.metricStarted({ ...sum, label: 'started' }),
          props.exportRun.metricSucceeded({ ...sum, label: 'succeeded' }),
          failedRuns('destination'),
          failedRuns('sluice'),
          props.exportRun.metricTimedOut({ ...sum, label: 'timed out' }),
        ],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Export lag (seconds): worst run, and the median the alarm watches',
        left: worstLagByDataset,
        right: [widespreadLag],
        rightAnnotations: [{ value: props.exportLagAlarmMinutes * 60, label: 'alarm' }],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Exported rows, files, bytes',
        left: ['RowsExported', 'FilesWritten'].map((metricName) =>
          engineMetric(metricName, { stage, ...sum, label: metricName }),
        ),
        right: [engineMetric('BytesWritten', { stage, ...sum, label: 'BytesWritten' })],
        width: 8,
      }),
    );
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Function errors',
        left: fns.map(([name, fn]) =>
          fn.metricErrors({ period: fiveMinutes, statistic: 'Sum', label: name }),
        ),
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Function duration (p99, ms)',
        left: fns.map(([name, fn]) =>
          fn.metricDuration({ period: fiveMinutes, statistic: 'p99', label: name }),
        ),
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Function throttles',
        left: fns.map(([name, fn]) =>
          fn.metricThrottles({ period: fiveMinutes, statistic: 'Sum', label: name }),
        ),
        width: 8,
      }),
    );
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'API requests and errors',
        left: [
          props.httpApi.metricCount({ period: fiveMinutes, statistic: 'Sum', label: 'requests' }),
          props.httpApi.metricClientError({ period: fiveMinutes, statistic: 'Sum', label: '4xx' }),
          apiServerErrors.with({ label: '5xx' }),
        ],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'API latency (p99, ms)',
        left: [props.httpApi.metricLatency({ period: fiveMinutes, statistic: 'p99', label: 'latency' })],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'DynamoDB',
        left: Object.entries(props.tables).map(([name, { table }]) =>
          table.metricConsumedReadCapacityUnits({
            period: fiveMinutes,
            statistic: 'Sum',
            label: `${name} RCU`,
          }),
        ),
        right: [throttles],
        width: 8,
      }),
    );
    // Per workspace: the counts ingestion publishes with a Workspace dimension (only when not zero).
    const byWorkspace = (metricName: string) =>
      new cloudwatch.MathExpression({
        expression: `SEARCH('{${METRICS_NAMESPACE},service,${STAGE_DIMENSION},Workspace} MetricName="${metricName}" ${STAGE_DIMENSION}="${stage}"', 'Sum', 300)`,
        usingMetrics: {},
        label: metricName,
        period: fiveMinutes,
      });
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Ingest lag (s): now minus when producers sent (p90, max)',
        left: [
          ingestMetric(INGEST_METRICS.lag, { stage, statistic: 'p90', period: fiveMinutes, label: 'p90' }),
          ingestMetric(INGEST_METRICS.lag, {
            stage,
            statistic: 'Maximum',
            period: fiveMinutes,
            label: 'max',
          }),
        ],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Rejected rows and envelopes, per workspace',
        left: [byWorkspace(INGEST_METRICS.rejectedRows), byWorkspace(INGEST_METRICS.rejectedEnvelopes)],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Dropped by rule (late, test, history), per workspace',
        left: [
          byWorkspace(INGEST_METRICS.droppedLate),
          byWorkspace(INGEST_METRICS.droppedTest),
          byWorkspace(INGEST_METRICS.droppedHistory),
        ],
        width: 8,
      }),
    );
  }

  /**
   * The ingest alarms beyond its errors and dead letters: nothing may wait, be refused or be throttled
   * without an operator hearing of it. docs/runbook.md says what each means and what to do first.
   */
  private ingestAlarms(props: SluiceObservabilityProps): Record<string, cloudwatch.Alarm> {
    const { stage } = props;
    const fiveMinutes = Duration.minutes(5);
    const alarm = cloudwatch.ComparisonOperator;
    const missing = cloudwatch.TreatMissingData;
    const lagSeconds = props.ingestLagAlarmMinutes * 60;
    const rejected = new cloudwatch.MathExpression({
      expression: 'FILL(rows, 0) + FILL(envelopes, 0)',
      usingMetrics: {
        rows: ingestMetric(INGEST_METRICS.rejectedRows, { stage, statistic: 'Sum', period: fiveMinutes }),
        envelopes: ingestMetric(INGEST_METRICS.rejectedEnvelopes, {
          stage,
          statistic: 'Sum',
          period: fiveMinutes,
        }),
      },
      period: fiveMinutes,
      label: 'Rejected rows and envelopes, all workspaces',
    });
    const alarms: Record<string, cloudwatch.Alarm> = {
      IngestDeadLetterAge: props.ingestDeadLetterQueue
        .metricApproximateAgeOfOldestMessage({ period: Duration.minutes(15), statistic: 'Maximum' })
        .createAlarm(this, 'IngestDeadLetterAge', {
          alarmDescription:
            `The oldest message in the ingest dead-letter queue is more than ${DEAD_LETTER_AGE_ALARM_SECONDS / 86_400} ` +
            'days old: it expires unredriven after 14 days. Redrive it (docs/runbook.md, "IngestDeadLetterAge").',
          threshold: DEAD_LETTER_AGE_ALARM_SECONDS,
          evaluationPeriods: 1,
          comparisonOperator: alarm.GREATER_THAN_THRESHOLD,
          treatMissingData: missing.NOT_BREACHING,
        }),
      IngestThrottles: props.ingestFunction
        .metricThrottles({ period: fiveMinutes, statistic: 'Sum' })
        .createAlarm(this, 'IngestThrottles', {
          alarmDescription:
            'Lambda throttled the ingest function in each of the last 3 five-minute periods: bus events wait in ' +
            'Lambda\'s queue (up to 6 hours, then the dead-letter queue). docs/runbook.md, "IngestThrottles".',
          threshold: 1,
          evaluationPeriods: 3,
          comparisonOperator: alarm.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          treatMissingData: missing.NOT_BREACHING,
        }),
      IngestAsyncEventAge: props.ingestFunction
        .metric('AsyncEventAge', { period: fiveMinutes, statistic: 'Maximum' })
        .createAlarm(this, 'IngestAsyncEventAge', {
          alarmDescription:
            `A bus event waited more than ${props.ingestLagAlarmMinutes} minutes in Lambda's queue before the ` +
            'ingest function ran it, for 10 minutes (throttles, failures being retried). docs/runbook.md.',
          threshold: lagSeconds * 1000,
          evaluationPeriods: 2,
          comparisonOperator: alarm.GREATER_THAN_THRESHOLD,
          treatMissingData: missing.NOT_BREACHING,
        }),
      // The buffer's age: how far behind the newest record the event source mapping reads (Lambda's IteratorAge).
      IngestBufferAge: props.ingestFunction
        .metric('IteratorAge', { period: fiveMinutes, statistic: 'Maximum' })
        .createAlarm(this, 'IngestBufferAge', {
          alarmDescription:
            `The oldest bus event in the ingest buffer (the Kinesis stream) waited more than ${props.ingestLagAlarmMinutes} ` +
            'minutes, for 10 minutes (failures being retried, throttles, a batch too slow): records expire after ' +
            '6 hours. docs/runbook.md, "IngestBufferAge".',
          threshold: lagSeconds * 1000,
          evaluationPeriods: 2,
          comparisonOperator: alarm.GREATER_THAN_THRESHOLD,
          treatMissingData: missing.NOT_BREACHING,
        }),
      IngestLag: ingestMetric(INGEST_METRICS.lag, {
        stage,
        statistic: 'p90',
        period: fiveMinutes,
      }).createAlarm(this, 'IngestLag', {
        alarmDescription:
          `Bus events were written more than ${props.ingestLagAlarmMinutes} minutes after producers sent them ` +
          '(p90, for 10 minutes). Recorded time is the ingest clock, so ExportLag cannot see this backlog. ' +
          'docs/runbook.md, "IngestLag".',
        threshold: lagSeconds,
        evaluationPeriods: 2,
        comparisonOperator: alarm.GREATER_THAN_THRESHOLD,
        treatMissingData: missing.NOT_BREACHING,
      }),
      RejectedEvents: rejected.createAlarm(this, 'RejectedEvents', {
        alarmDescription:
          `Ingestion refused ${props.rejectedEventsAlarmThreshold} or more rows or envelopes in 5 minutes. They are ` +
          'kept 14 days: `sluice events rejected list`, fix, then `... redrive` (docs/runbook.md).',
        threshold: props.rejectedEventsAlarmThreshold,
        evaluationPeriods: 1,
        comparisonOperator: alarm.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: missing.NOT_BREACHING,
      }),
    };
    return alarms;
  }
}
