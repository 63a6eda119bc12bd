import { EVENT_DATASETS } from '@sluice/core';
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

/** The CloudWatch namespace of the engine's own metrics (Powertools `POWERTOOLS_METRICS_NAMESPACE`). */
export const METRICS_NAMESPACE = 'Sluice';
/** The engine's export lag metric: now minus `exportedThrough`, per dataset, in seconds. */
export const EXPORT_LAG_METRIC = 'ExportLagSeconds';
/**
 * The `service` dimension Powertools puts on every engine metric (`packages/engine/src/metrics.ts`);
 * alarms must name the exact dimension set, so the infra tests check it against the engine's output.
 */
export const ENGINE_SERVICE_DIMENSION = 'sluice-engine';

/** Properties of {@link SluiceObservability}. */
export interface SluiceObservabilityProps {
  /** Names the dashboard. */
  readonly stage: string;
  /** Subscribed to the alarm topic when given. */
  readonly alarmEmail?: string;
  /** The export workflow: its failed, timed-out and aborted executions alarm. */
  readonly exportRun: sfn.IStateMachine;
  /** The scheduler: if it fails, nothing exports. */
  readonly dispatch: sfn.IStateMachine;
  /** Tables whose throttled reads and writes alarm. */
  readonly tables: Readonly<Record<string, dynamodb.ITable>>;
  /** The writer: its errors alarm. */
  readonly writerFunction: lambda.IFunction;
  /** Every function, for the dashboard. */
  readonly functions: Readonly<Record<string, lambda.IFunction>>;
  /** The HTTP API: its 5xx alarm. */
  readonly httpApi: apigwv2.IHttpApi;
  /** Events EventBridge could not deliver to the ingest function. */
  readonly ingestDeadLetterQueue: sqs.IQueue;
  /** Export lag, in minutes, over which the lag alarm fires. */
  readonly exportLagAlarmMinutes: number;
}

/** One engine metric, with the dimensions the engine publishes it under. */
export function engineMetric(
  metricName: string,
  props: { statistic: string; period: Duration; dataset?: string; label?: string },
): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: METRICS_NAMESPACE,
    metricName,
    dimensionsMap: {
      service: ENGINE_SERVICE_DIMENSION,
      ...(props.dataset === undefined ? {} : { Dataset: props.dataset }),
    },
    statistic: props.statistic,
    period: props.period,
    label: props.label,
  });
}

/**
 * The alarm topic, the alarms and the dashboard. Each alarm notifies the topic when it fires and when it
 * recovers; `docs/deploy.md` says what each one means and what to do.
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

    const runProblems = (machine: sfn.IStateMachine) =>
      new cloudwatch.MathExpression({
        expression: 'failed + timedOut + aborted',
        usingMetrics: {
          failed: machine.metricFailed({ period: fiveMinutes, statistic: 'Sum' }),
          timedOut: machine.metricTimedOut({ period: fiveMinutes, statistic: 'Sum' }),
          aborted: machine.metricAborted({ period: fiveMinutes, statistic: 'Sum' }),
        },
        period: fiveMinutes,
      });

    const throttleMetrics: Record<string, cloudwatch.IMetric> = {};
    let n = 0;
    for (const table of Object.values(props.tables)) {
      for (const metricName of ['ReadThrottleEvents', 'WriteThrottleEvents']) {
        throttleMetrics[`t${n++}`] = table.metric(metricName, { period: fiveMinutes, statistic: 'Sum' });
      }
    }
    const throttles = new cloudwatch.MathExpression({
      expression: Object.keys(throttleMetrics).join(' + '),
      usingMetrics: throttleMetrics,
      period: fiveMinutes,
      label: 'Throttled DynamoDB requests',
    });

    // One series per event dataset (dimension `Dataset`); the alarm watches the worst of them.
    const lagByDataset = EVENT_DATASETS.map((dataset) =>
      engineMetric(EXPORT_LAG_METRIC, { statistic: 'Maximum', period: fiveMinutes, dataset, label: dataset }),
    );
    const exportLag = new cloudwatch.MathExpression({
      expression: `MAX([${lagByDataset.map((_, i) => `lag${i}`).join(', ')}])`,
      usingMetrics: Object.fromEntries(lagByDataset.map((metric, i) => [`lag${i}`, metric])),
      period: fiveMinutes,
      label: 'Worst export lag (s)',
    });

    const apiServerErrors = props.httpApi.metricServerError({ period: fiveMinutes, statistic: 'Sum' });
    const writerErrors = props.writerFunction.metricErrors({ period: fiveMinutes, statistic: 'Sum' });
    const deadLetters = props.ingestDeadLetterQueue.metricApproximateNumberOfMessagesVisible({
      period: fiveMinutes,
      statistic: 'Maximum',
    });

    const alarms: Record<string, cloudwatch.Alarm> = {
      ExportRunFailures: runProblems(props.exportRun).createAlarm(this, 'ExportRunFailures', {
        alarmDescription:
          'Export runs failed, timed out or were aborted. Failed runs retry with back-off; see docs/deploy.md.',
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
      DispatchFailures: runProblems(props.dispatch).createAlarm(this, 'DispatchFailures', {
        alarmDescription: 'The dispatcher failed twice in 5 minutes: no export starts while it fails.',
        threshold: 2,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
      DynamoDbThrottles: throttles.createAlarm(this, 'DynamoDbThrottles', {
        alarmDescription: 'DynamoDB throttled requests on a Sluice table (on-demand capacity hit a limit).',
        threshold: 10,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
      WriterErrors: writerErrors.createAlarm(this, 'WriterErrors', {
        alarmDescription:
          'The writer function threw (not a classified bucket error) in 2 of 3 5-minute periods.',
        threshold: 1,
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
      ApiServerErrors: apiServerErrors.createAlarm(this, 'ApiServerErrors', {
        alarmDescription: 'The Data Exports API answered 5 or more 5xx responses in 5 minutes.',
        threshold: 5,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
      ExportLag: exportLag.createAlarm(this, 'ExportLag', {
        alarmDescription: `A dataset's export lag stayed over ${props.exportLagAlarmMinutes} minutes for 15 minutes.`,
        threshold: props.exportLagAlarmMinutes * 60,
        evaluationPeriods: 3,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
      IngestDeadLetters: deadLetters.createAlarm(this, 'IngestDeadLetters', {
        alarmDescription:
          'Events EventBridge could not deliver to the ingest function are waiting in its DLQ.',
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
    };
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
          props.exportRun.metricStarted({ period: fiveMinutes, statistic: 'Sum', label: 'started' }),
          props.exportRun.metricSucceeded({ period: fiveMinutes, statistic: 'Sum', label: 'succeeded' }),
          props.exportRun.metricFailed({ period: fiveMinutes, statistic: 'Sum', label: 'failed' }),
          props.exportRun.metricTimedOut({ period: fiveMinutes, statistic: 'Sum', label: 'timed out' }),
        ],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Export lag (seconds, max)',
        left: lagByDataset,
        leftAnnotations: [{ value: props.exportLagAlarmMinutes * 60, label: 'alarm' }],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Exported rows, files, bytes',
        left: ['RowsExported', 'FilesWritten'].map((metricName) =>
          engineMetric(metricName, { statistic: 'Sum', period: fiveMinutes, label: metricName }),
        ),
        right: [
          engineMetric('BytesWritten', { statistic: 'Sum', period: fiveMinutes, label: 'BytesWritten' }),
        ],
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
        left: Object.entries(props.tables).map(([name, table]) =>
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
  }
}
