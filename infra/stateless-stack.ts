import { EVENTS_DETAIL_TYPE, SUBSCRIBERS_DETAIL_TYPE } from '@sluice/eventlog';
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import type { Construct } from 'constructs';
import { DispatchWorkflow } from './constructs/dispatch-workflow.js';
import { ExportRunWorkflow } from './constructs/export-run-workflow.js';
import { SluiceHttpApi } from './constructs/http-api.js';
import { SluiceObservability } from './constructs/observability.js';
import { SluiceFunction } from './constructs/sluice-function.js';
import type { SluiceSettings } from './settings.js';
import { SECRET_CONTEXT_CONDITIONS } from './stateful-stack.js';

/** DynamoDB actions, grouped by what a function does with a table. Never `dynamodb:*`. */
const DDB = {
  get: ['dynamodb:GetItem'],
  query: ['dynamodb:Query'],
  put: ['dynamodb:PutItem'],
  update: ['dynamodb:UpdateItem'],
  delete: ['dynamodb:DeleteItem'],
  batchWrite: ['dynamodb:BatchWriteItem'],
  conditionCheck: ['dynamodb:ConditionCheckItem'],
} as const;

/** Properties of {@link StatelessStack}. */
export interface StatelessStackProps extends StackProps {
  /** The validated settings. */
  readonly settings: SluiceSettings;
  /** From the stateful stack. */
  readonly controlTable: dynamodb.ITable;
  /** From the stateful stack. */
  readonly eventsTable: dynamodb.ITable;
  /** From the stateful stack. */
  readonly subscribersTable: dynamodb.ITable;
  /** From the stateful stack: seals destination secrets. */
  readonly secretsKey: kms.IKey;
  /** From the stateful stack: where platform producers put events. */
  readonly eventBus: events.IEventBus;
}

/**
 * Everything that can be replaced without losing data: the functions, the HTTP API, the two state
 * machines, the schedule and the ingestion rule, the alarms and the dashboard.
 *
 * Each function gets exactly the table actions and key actions its code uses, and the environment
 * variable naming a resource is set in the same call that grants it (`useTable`, `useSecretsKey`).
 */
export class StatelessStack extends Stack {
  /** The Data Exports API. */
  public readonly api: SluiceHttpApi;
  /** Every function, by role. */
  public readonly functions: {
    readonly api: SluiceFunction;
    readonly authorizer: SluiceFunction;
    readonly ingest: SluiceFunction;
    readonly runControl: SluiceFunction;
    readonly writer: SluiceFunction;
    readonly dispatch: SluiceFunction;
  };
  /** The ExportRun workflow (Express). */
  public readonly exportRun: ExportRunWorkflow;
  /** The Dispatch workflow (Express), started every minute. */
  public readonly dispatch: DispatchWorkflow;
  /** Alarms, topic and dashboard. */
  public readonly observability: SluiceObservability;

  constructor(scope: Construct, id: string, props: StatelessStackProps) {
    super(scope, id, {
      description: `Sluice (${props.settings.stage}): API, functions, state machines, schedule, alarms.`,
      ...props,
    });
    const { settings } = props;
    const logRetention = settings.logRetentionDays as logs.RetentionDays;
    const fn = (
      id: string,
      serviceName: string,
      entry: string,
      extra: { memorySize: number; timeout: Duration; description: string },
    ) =>
      new SluiceFunction(this, id, {
        entry,
        serviceName,
        logRetention,
        skipBundling: settings.skipBundling,
        ...extra,
        environment: { SLUICE_STAGE: settings.stage },
      });

    const useTable = (
      f: SluiceFunction,
      envName: string,
      table: dynamodb.ITable,
      actions: readonly (readonly string[])[],
      queriedIndexes: readonly string[] = [],
    ) => {
      f.addEnvironment(envName, table.tableName);
      f.addToRolePolicy(new iam.PolicyStatement({ actions: actions.flat(), resources: [table.tableArn] }));
      if (queriedIndexes.length > 0) {
        f.addToRolePolicy(
          new iam.PolicyStatement({
            actions: [...DDB.query],
            resources: queriedIndexes.map((index) => `${table.tableArn}/index/${index}`),
          }),
        );
      }
    };
    const useSecretsKey = (f: SluiceFunction, actions: ('kms:GenerateDataKey' | 'kms:Decrypt')[]) => {
      f.addEnvironment('SLUICE_KMS_KEY_ID', props.secretsKey.keyArn);
      f.addToRolePolicy(
        new iam.PolicyStatement({
          actions,
          resources: [props.secretsKey.keyArn],
          conditions: SECRET_CONTEXT_CONDITIONS,
        }),
      );
    };

    // --- the API and its authorizer -------------------------------------------------------------
    const apiFunction = fn('ApiFunction', 'api', 'functions/api/handler.ts', {
      description: 'Sluice Data Exports API',
      memorySize: 1024,
      timeout: Duration.seconds(29),
    });
    // Workspaces, API keys, destinations (a delete removes its cursors in a batch), runs, queueing a run.
    useTable(apiFunction, 'SLUICE_CONTROL_TABLE', props.controlTable, [
      DDB.get,
      DDB.query,
      DDB.put,
      DDB.update,
      DDB.delete,
      DDB.batchWrite,
    ]);
    // GenerateDataKey seals a new secret; Decrypt opens the stored one to re-test a moved location (PATCH).
    useSecretsKey(apiFunction, ['kms:GenerateDataKey', 'kms:Decrypt']);

    const authorizerFunction = fn('AuthorizerFunction', 'authorizer', 'functions/authorizer/handler.ts', {
      description: 'Sluice API key authorizer',
      memorySize: 512,
      timeout: Duration.seconds(5),
    });
    // One GetItem of the key's SHA-256 record.
    useTable(authorizerFunction, 'SLUICE_CONTROL_TABLE', props.controlTable, [DDB.get]);

    this.api = new SluiceHttpApi(this, 'Api', {
      apiFunction,
      authorizerFunction,
      logRetention,
      corsOrigins: settings.corsOrigins,
      domainName: settings.domainName,
      certificateArn: settings.certificateArn,
    });

    // --- ingestion --------------------------------------------------------------------------------
    const ingestFunction = fn('IngestFunction', 'ingest', 'functions/ingest/handler.ts', {
      description: 'Sluice ingest: bus events into the event log',
      memorySize: 512,
      timeout: Duration.seconds(30),
    });
    // Batched writes only (puts, and deletes of subscribers), retrying unprocessed items.
    useTable(ingestFunction, 'SLUICE_EVENTS_TABLE', props.eventsTable, [DDB.batchWrite]);
    useTable(ingestFunction, 'SLUICE_SUBSCRIBERS_TABLE', props.subscribersTable, [DDB.batchWrite]);
    ingestFunction.addEnvironment('SLUICE_EVENT_RETENTION_DAYS', String(settings.eventLogRetentionDays));

    const ingestDeadLetters = new sqs.Queue(this, 'IngestDeadLetters', {
      retentionPeriod: Duration.days(14),
      enforceSSL: true,
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(ingestDeadLetters).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason: 'This queue is itself the dead-letter queue of the ingest rule target.',
    });
    new events.Rule(this, 'IngestRule', {
      description: 'Sluice events and subscriber changes on the Sluice bus go to the ingest function',
      eventBus: props.eventBus,
      eventPattern: { account: [this.account], detailType: [EVENTS_DETAIL_TYPE, SUBSCRIBERS_DETAIL_TYPE] },
      targets: [
        new targets.LambdaFunction(ingestFunction, {
          deadLetterQueue: ingestDeadLetters,
          retryAttempts: 8,
          maxEventAge: Duration.hours(24),
        }),
      ],
    });

    // --- the export engine ------------------------------------------------------------------------
    const runControlFunction = fn('RunControlFunction', 'run-control', 'functions/run-control/handler.ts', {
      description: 'Sluice ExportRun steps: claim and plan, commit, record failure',
      memorySize: 1024,
      timeout: Duration.seconds(60),
    });
    // Leases (put, conditional delete), cursors (query; fenced transactions of condition checks and
    // updates), run records (put, update) and the destination's run state (update).
    useTable(runControlFunction, 'SLUICE_CONTROL_TABLE', props.controlTable, [
      DDB.get,
      DDB.query,
      DDB.put,
      DDB.update,
      DDB.delete,
      DDB.conditionCheck,
    ]);

    const writerFunction = fn('WriterFunction', 'writer', 'functions/writer/handler.ts', {
      description: 'Sluice writer: one (dataset, window) to the customer bucket',
      // 1,769 MB is one full vCPU: gzip and JSON are CPU-bound.
      memorySize: 1769,
      timeout: Duration.minutes(4),
    });
    // Reads only: the destination with its cursors (one Query), the window's rows, the snapshot.
    useTable(writerFunction, 'SLUICE_CONTROL_TABLE', props.controlTable, [DDB.query]);
    useTable(writerFunction, 'SLUICE_EVENTS_TABLE', props.eventsTable, [DDB.query]);
    useTable(writerFunction, 'SLUICE_SUBSCRIBERS_TABLE', props.subscribersTable, [DDB.query]);
    // The writer opens the destination's secret; it never seals one.
    useSecretsKey(writerFunction, ['kms:Decrypt']);

    const dispatchFunction = fn('DispatchFunction', 'dispatch', 'functions/dispatch/handler.ts', {
      description: 'Sluice dispatch: finds due destinations, settles those with nothing new',
      memorySize: 512,
      timeout: Duration.seconds(60),
    });
    // The due index, destinations and cursors (queries), the lease (get), and settling a destination with
    // nothing new: fenced cursor advance (condition checks, updates), nextRunAt and run state (updates).
    useTable(
      dispatchFunction,
      'SLUICE_CONTROL_TABLE',
      props.controlTable,
      [DDB.get, DDB.query, DDB.update, DDB.conditionCheck],
      ['due'],
    );
    useTable(dispatchFunction, 'SLUICE_EVENTS_TABLE', props.eventsTable, [DDB.query]);
    useTable(dispatchFunction, 'SLUICE_SUBSCRIBERS_TABLE', props.subscribersTable, [DDB.query]);

    this.functions = {
      api: apiFunction,
      authorizer: authorizerFunction,
      ingest: ingestFunction,
      runControl: runControlFunction,
      writer: writerFunction,
      dispatch: dispatchFunction,
    };

    // --- workflows and the schedule ---------------------------------------------------------------
    const workflowLogs = (id: string, name: string) =>
      new logs.LogGroup(this, id, {
        // Step Functions' advice: under /aws/vendedlogs/ the log delivery needs no growing resource policy
        // on the group (CloudWatch Logs caps those at 5,120 characters per region).
        logGroupName: `/aws/vendedlogs/states/sluice-${settings.stage}-${name}`,
        retention: logRetention,
        removalPolicy: RemovalPolicy.DESTROY,
      });
    this.exportRun = new ExportRunWorkflow(this, 'ExportRun', {
      runControlFunction,
      writerFunction,
      writerConcurrency: settings.writerConcurrency,
      logGroup: workflowLogs('ExportRunLogs', 'export-run'),
    });
    this.dispatch = new DispatchWorkflow(this, 'Dispatch', {
      dispatchFunction,
      exportRun: this.exportRun.stateMachine,
      logGroup: workflowLogs('DispatchLogs', 'dispatch'),
    });
    for (const machine of [this.exportRun.stateMachine, this.dispatch.stateMachine]) {
      Validations.of(machine.role).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          'X-Ray segment writes and the CloudWatch Logs delivery APIs accept no resource narrower than "*" ' +
          '(the policy Step Functions documents for logging and tracing).',
      });
    }
    const invokes: [sfn.StateMachine, lambda.IFunction][] = [
      [this.exportRun.stateMachine, runControlFunction],
      [this.exportRun.stateMachine, writerFunction],
      [this.dispatch.stateMachine, dispatchFunction],
    ];
    for (const [machine, f] of invokes) {
      const functionId = this.resolve((f.node.defaultChild as lambda.CfnFunction).logicalId);
      Validations.of(machine.role).acknowledge({
        id: `AwsSolutions-IAM5[Resource::<${functionId}.Arn>:*]`,
        reason:
          'Invokes versions and aliases of this stack\'s own function only (the ":*" qualifier suffix).',
      });
    }

    new events.Rule(this, 'DispatchSchedule', {
      description: 'Starts the Dispatch state machine every minute',
      schedule: events.Schedule.rate(Duration.minutes(1)),
      targets: [new targets.SfnStateMachine(this.dispatch.stateMachine, { retryAttempts: 2 })],
    });

    // --- observability ----------------------------------------------------------------------------
    this.observability = new SluiceObservability(this, 'Observability', {
      stage: settings.stage,
      alarmEmail: settings.alarmEmail,
      exportRun: this.exportRun.stateMachine,
      dispatch: this.dispatch.stateMachine,
      tables: { control: props.controlTable, events: props.eventsTable, subscribers: props.subscribersTable },
      writerFunction,
      functions: this.functions,
      httpApi: this.api.httpApi,
      ingestDeadLetterQueue: ingestDeadLetters,
      exportLagAlarmMinutes: settings.exportLagAlarmMinutes,
    });

    for (const f of Object.values(this.functions)) {
      Validations.of(f).acknowledge({
        id: 'AwsSolutions-L1',
        reason:
          'Pinned to nodejs22.x, the runtime the code is built and tested for; upgrades are deliberate.',
      });
    }

    new CfnOutput(this, 'ExportRunStateMachineArn', { value: this.exportRun.stateMachine.stateMachineArn });
    new CfnOutput(this, 'DispatchStateMachineArn', { value: this.dispatch.stateMachine.stateMachineArn });
    new CfnOutput(this, 'AlarmTopicArn', { value: this.observability.alarmTopic.topicArn });
    new CfnOutput(this, 'DashboardName', { value: this.observability.dashboard.dashboardName });
  }
}
