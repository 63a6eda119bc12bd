import { CONTROL_TABLE, EVENTS_TABLE, SUBSCRIBERS_TABLE, type TableSpec } from '@sluice/core';
import { EVENTS_DETAIL_TYPE, SUBSCRIBERS_DETAIL_TYPE, WORKSPACE_SOURCE_PREFIX } from '@sluice/eventlog';
import {
  Aws,
  CfnOutput,
  Duration,
  Fn,
  RemovalPolicy,
  Stack,
  type StackProps,
  Token,
  Validations,
} from 'aws-cdk-lib';
import type * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as destinations from 'aws-cdk-lib/aws-lambda-destinations';
import * as eventSources from 'aws-cdk-lib/aws-lambda-event-sources';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import type { Construct } from 'constructs';
import { DispatchWorkflow } from './constructs/dispatch-workflow.js';
import { ExportRunWorkflow } from './constructs/export-run-workflow.js';
import { SluiceHttpApi } from './constructs/http-api.js';
import { SluiceObservability } from './constructs/observability.js';
import { SluiceFunction } from './constructs/sluice-function.js';
import type { FunctionName, SluiceSettings } from './settings.js';
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

/** Minutes between two compactions of the event log into the archive. */
export const ARCHIVE_SCHEDULE_MINUTES = 15;

/**
 * The archive lag (seconds between now and the oldest archive cursor) over which the archive alarm fires: a
 * settled hour is normally archived within about 1.5 hours; the alarm leaves at least half the hot retention
 * to fix the compaction before rows expire unarchived. At most 6 hours.
 */
export function archiveLagAlarmSeconds(eventLogRetentionDays: number): number {
  return Math.min(6 * 3_600, (eventLogRetentionDays * 86_400) / 2);
}

/** How long Lambda keeps retrying an ingest event before it goes to the dead-letter queue. */
export const INGEST_MAX_EVENT_AGE = Duration.hours(6);
/** Records at most in one ingest invocation from the buffer (Lambda's 6 MB payload holds ~3,800 one-row entries). */
export const INGEST_BUFFER_BATCH_SIZE = 5_000;
/** How long the buffer's event source mapping gathers a batch (bench/buffer.ts prices this window). */
export const INGEST_BUFFER_WINDOW_SECONDS = 60;

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
  /** From the stateful stack: Sluice's own event archive. */
  readonly archiveBucket: s3.IBucket;
  /** From the stateful stack: list the archive and get its objects. */
  readonly archiveReadAccess: iam.IManagedPolicy;
  /** From the stateful stack: also put its objects (the compaction). */
  readonly archiveWriteAccess: iam.IManagedPolicy;
  /** From the stateful stack: where platform producers put events. */
  readonly eventBus: events.IEventBus;
  /** From the stateful stack: the ingest dead-letter queue. */
  readonly ingestDeadLetters: sqs.IQueue;
  /** Accounts besides this one whose producers put events on the bus (the bus policy names them). */
  readonly producerAccounts?: readonly string[];
  /**
   * The name of the custom domain the stateful stack holds (`apiDomain`): the API is mapped onto it.
   * @default - no custom domain: the execute-api URL
   */
  readonly apiDomainName?: string;
}

/**
 * Everything that can be replaced without losing data: the functions, the HTTP API (mapped onto the stateful
 * stack's custom domain, when there is one), the two state machines, the schedule and the ingestion rule,
 * the alarms and the dashboard.
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
    readonly archive: SluiceFunction;
  };
  /** The ExportRun workflow (Express). */
  public readonly exportRun: ExportRunWorkflow;
  /** The Dispatch workflow (Express), started every minute. */
  public readonly dispatch: DispatchWorkflow;
  /** Alarms, topic and dashboard. */
  public readonly observability: SluiceObservability;
  /**
   * Where bus events go that ingestion could not write: the ingest function's on-failure destination (after
   * three attempts) and the ingest rule's dead-letter queue (events EventBridge could not deliver). The
   * stateful stack's queue.
   */
  public readonly ingestDeadLetters: sqs.IQueue;
  /**
   * The buffer between the bus and the ingest function (docs/internals.md, "The buffer between the bus and
   * ingest"): the ingest rule's target, read by the function's event source mapping in batches.
   */
  public readonly ingestBuffer: kinesis.Stream;

  constructor(scope: Construct, id: string, props: StatelessStackProps) {
    super(scope, id, {
      description: `Sluice (${props.settings.stage}): API, functions, state machines, schedule, alarms.`,
      ...props,
    });
    const { settings } = props;
    const logRetention = settings.logRetentionDays as logs.RetentionDays;
    const logRemovalPolicy = settings.retainLogGroups ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    const fn = (
      name: FunctionName,
      id: string,
      serviceName: string,
      entry: string,
      extra: { memorySize: number; timeout: Duration; description: string },
    ) => {
      const f = new SluiceFunction(this, id, {
        entry,
        serviceName,
        logRetention,
        logRemovalPolicy,
        skipBundling: settings.skipBundling,
        tracing: settings.tracing ? lambda.Tracing.ACTIVE : lambda.Tracing.DISABLED,
        reservedConcurrentExecutions: settings.reservedConcurrency[name],
        ...extra,
        environment: { SLUICE_STAGE: settings.stage },
      });
      if (settings.tracing) {
        Validations.of(f.role!).acknowledge({
          id: 'AwsSolutions-IAM5[Resource::*]',
          reason:
            'Active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords accept no resource narrower ' +
            'than "*" (the policy Lambda documents for X-Ray).',
        });
      }
      return f;
    };

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
    /**
     * The archive bucket: the readers get and list its objects; the compaction also puts them (multipart
     * uploads included, aborted when one fails). Never a wildcard action.
     */
    const useArchive = (f: SluiceFunction, write: boolean) => {
      f.addEnvironment('SLUICE_ARCHIVE_BUCKET', props.archiveBucket.bucketName);
      f.addEnvironment('SLUICE_EVENT_RETENTION_DAYS', String(settings.eventLogRetentionDays));
      f.role?.addManagedPolicy(write ? props.archiveWriteAccess : props.archiveReadAccess);
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
    /**
     * Customers' IAM roles (role destinations, Amazon S3): the connection test (API) and the writer assume
     * them through STS, with the destination's external ID, which each role's trust policy requires. Nothing
     * but sts:AssumeRole; the roles are in the customers' accounts, unknown when the stack is deployed.
     */
    const partition = Stack.of(this).partition;
    // cdk-nag names an unresolved partition by its pseudo parameter; a stack with a region knows it.
    const nagPartition = Token.isUnresolved(partition) ? '<AWS::Partition>' : partition;
    const assumeCustomerRoles = (f: SluiceFunction) => {
      f.addToRolePolicy(
        new iam.PolicyStatement({
          actions: ['sts:AssumeRole'],
          resources: [`arn:${partition}:iam::*:role/*`],
          // Never a role of Sluice's own account (the confused deputy): the API refuses such a roleArn too.
          conditions: { StringNotEquals: { 'aws:ResourceAccount': Stack.of(this).account } },
        }),
      );
      Validations.of(f.role!).acknowledge({
        id: `AwsSolutions-IAM5[Resource::arn:${nagPartition}:iam::*:role/*]`,
        reason:
          "sts:AssumeRole only, on customers' own roles (role destinations): they live in any customer's " +
          "account, named by the customer at run time; each role's trust policy admits this function's role " +
          "only with the destination's external ID (docs/customer-buckets.md).",
      });
    };

    // --- the API and its authorizer -------------------------------------------------------------
    const apiFunction = fn('api', 'ApiFunction', 'api', 'functions/api/handler.ts', {
      description: 'Sluice Data Exports API',
      memorySize: 1024,
      timeout: Duration.seconds(29),
    });
    // Workspaces, API keys, destinations (a delete removes its cursors in a batch), runs, queueing a run,
    // a workspace's child organisations (a Query of its CHILD# items);
    // a new backfill is put in a transaction that checks its destination (ConditionCheck).
    useTable(apiFunction, 'SLUICE_CONTROL_TABLE', props.controlTable, [
      DDB.get,
      DDB.query,
      DDB.put,
      DDB.update,
      DDB.delete,
      DDB.batchWrite,
      DDB.conditionCheck,
    ]);
    // A backfill may start no earlier than the event log keeps rows.
    apiFunction.addEnvironment('SLUICE_EVENT_RETENTION_DAYS', String(settings.eventLogRetentionDays));
    // Every request meters its key: one conditional UpdateItem of the key item (see ApiKeyMeter).
    apiFunction.addEnvironment('SLUICE_API_KEY_RATE_LIMIT', String(settings.apiKeyRateLimit));
    apiFunction.addEnvironment('SLUICE_API_KEY_BURST_LIMIT', String(settings.apiKeyBurstLimit));
    // A create beyond it is 409 limit_exceeded (a counter item in the create's transaction).
    apiFunction.addEnvironment('SLUICE_MAX_EXPORTS_PER_WORKSPACE', String(settings.maxExportsPerWorkspace));
    // GenerateDataKey seals a new secret; Decrypt opens the stored one to re-test a new path prefix (PATCH).
    useSecretsKey(apiFunction, ['kms:GenerateDataKey', 'kms:Decrypt']);
    // A role destination's connection test assumes the customer's role; a roleArn of this account is refused.
    assumeCustomerRoles(apiFunction);
    apiFunction.addEnvironment('SLUICE_ACCOUNT_ID', Stack.of(this).account);

    const authorizerFunction = fn(
      'authorizer',
      'AuthorizerFunction',
      'authorizer',
      'functions/authorizer/handler.ts',
      {
        description: 'Sluice API key authorizer',
        memorySize: 512,
        timeout: Duration.seconds(5),
      },
    );
    // One GetItem of the key's SHA-256 record.
    useTable(authorizerFunction, 'SLUICE_CONTROL_TABLE', props.controlTable, [DDB.get]);

    this.api = new SluiceHttpApi(this, 'Api', {
      apiFunction,
      authorizerFunction,
      logRetention,
      logRemovalPolicy,
      corsOrigins: settings.corsOrigins,
      domainName: props.apiDomainName,
      rateLimit: settings.apiRateLimit,
      burstLimit: settings.apiBurstLimit,
    });
    if (props.apiDomainName !== undefined) {
      // With a custom domain, customers use it; the execute-api URL beside it would be a second way in.
      (this.api.httpApi.node.defaultChild as apigwv2.CfnApi).disableExecuteApiEndpoint = true;
    }

    // --- ingestion --------------------------------------------------------------------------------
    const ingestFunction = fn('ingest', 'IngestFunction', 'ingest', 'functions/ingest/handler.ts', {
      description: 'Sluice ingest: bus events into the event log',
      memorySize: 512,
      // A buffer batch: up to a few thousand bus events of up to a few hundred workspaces.
      timeout: Duration.minutes(2),
    });
    // Batched writes (puts, and deletes of subscribers), retrying unprocessed items; and the current rows of
    // message_events and project_summary: a consistent read of the state, then the state and its emitted rows
    // in one conditional transaction (its puts), or a conditional put of the state alone.
    useTable(ingestFunction, 'SLUICE_EVENTS_TABLE', props.eventsTable, [DDB.batchWrite, DDB.get, DDB.put]);
    useTable(ingestFunction, 'SLUICE_SUBSCRIBERS_TABLE', props.subscribersTable, [DDB.batchWrite]);
    // Rejected rows and envelopes are kept, with their reasons, as items of the control table (one PutItem a
    // bus event), for `sluice events rejected list|redrive`.
    useTable(ingestFunction, 'SLUICE_CONTROL_TABLE', props.controlTable, [DDB.put]);
    ingestFunction.addEnvironment('SLUICE_EVENT_RETENTION_DAYS', String(settings.eventLogRetentionDays));

    // Named by ARN and URL, not as the stateful stack's construct: that queue's policy already admits every
    // rule of the bus, and a policy statement naming this stack's rule would make the stacks depend on each other.
    this.ingestDeadLetters = sqs.Queue.fromQueueAttributes(this, 'IngestDeadLetters', {
      queueArn: props.ingestDeadLetters.queueArn,
      queueUrl: props.ingestDeadLetters.queueUrl,
    });
    // EventBridge invokes the function asynchronously: Lambda retries a failed event twice, then hands it,
    // with the error, to the queue. Without this the event would be discarded.
    ingestFunction.configureAsyncInvoke({
      retryAttempts: 2,
      maxEventAge: INGEST_MAX_EVENT_AGE,
      onFailure: new destinations.SqsDestination(this.ingestDeadLetters),
    });
    // The buffer: one provisioned shard (1,000 records or 1 MB a second, ten times the 200 million a
    // month), 24 hours of records. The event source mapping gathers a batch for up to a minute (segments of many
    // rows when producers send one row an entry), retries from the first record the function reports failed,
    // halves a batch that throws, and after 2 retries discards it with an on-failure record (sequence numbers
    // only) to the dead-letter queue. The function itself sends a bus event it could not write after 3 attempts
    // to the queue whole, in the format `sluice events redrive` reads.
    this.ingestBuffer = new kinesis.Stream(this, 'IngestBuffer', {
      streamMode: kinesis.StreamMode.PROVISIONED,
      shardCount: 1,
      retentionPeriod: Duration.hours(24),
      encryption: kinesis.StreamEncryption.MANAGED,
    });
    ingestFunction.addEventSource(
      new eventSources.KinesisEventSource(this.ingestBuffer, {
        startingPosition: lambda.StartingPosition.TRIM_HORIZON,
        batchSize: INGEST_BUFFER_BATCH_SIZE,
        maxBatchingWindow: Duration.seconds(INGEST_BUFFER_WINDOW_SECONDS),
        bisectBatchOnError: true,
        retryAttempts: 2,
        reportBatchItemFailures: true,
        maxRecordAge: INGEST_MAX_EVENT_AGE,
        parallelizationFactor: 1,
        onFailure: new eventSources.SqsDlq(this.ingestDeadLetters),
      }),
    );
    this.ingestDeadLetters.grantSendMessages(ingestFunction);
    ingestFunction.addEnvironment('SLUICE_INGEST_DEAD_LETTER_QUEUE_URL', this.ingestDeadLetters.queueUrl);
    new events.Rule(this, 'IngestRule', {
      description:
        'Sluice events and subscriber changes of a workspace (source sluice.workspace.<id>) go to the ingest buffer',
      eventBus: props.eventBus,
      eventPattern: {
        account: [this.account, ...(props.producerAccounts ?? [])],
        source: events.Match.prefix(WORKSPACE_SOURCE_PREFIX),
        detailType: [EVENTS_DETAIL_TYPE, SUBSCRIBERS_DETAIL_TYPE],
      },
      targets: [
        new targets.KinesisStream(this.ingestBuffer, {
          partitionKeyPath: '$.detail.workspaceId',
          deadLetterQueue: this.ingestDeadLetters,
          retryAttempts: 8,
          maxEventAge: Duration.hours(24),
        }),
      ],
    });

    // --- the export engine ------------------------------------------------------------------------
    const runControlFunction = fn(
      'runControl',
      'RunControlFunction',
      'run-control',
      'functions/run-control/handler.ts',
      {
        description: 'Sluice ExportRun steps: claim and plan, commit, record failure',
        memorySize: 1024,
        timeout: Duration.seconds(60),
      },
    );
    // Leases (put, conditional delete), cursors and window progress (query; fenced transactions of
    // condition checks and updates; progress deleted in batches once committed), run records (put, update)
    // and the destination's run state (update).
    useTable(runControlFunction, 'SLUICE_CONTROL_TABLE', props.controlTable, [
      DDB.get,
      DDB.query,
      DDB.put,
      DDB.update,
      DDB.delete,
      DDB.batchWrite,
      DDB.conditionCheck,
    ]);
    // Rows behind the event log's retention are reported lost by the plan: the same retention as ingest.
    runControlFunction.addEnvironment('SLUICE_EVENT_RETENTION_DAYS', String(settings.eventLogRetentionDays));
    // A destination's failing and recovered notices go on the Sluice bus: PutEvents on that bus only.
    runControlFunction.addEnvironment('SLUICE_EVENT_BUS_NAME', props.eventBus.eventBusName);
    runControlFunction.addToRolePolicy(
      new iam.PolicyStatement({ actions: ['events:PutEvents'], resources: [props.eventBus.eventBusArn] }),
    );

    const writerFunction = fn('writer', 'WriterFunction', 'writer', 'functions/writer/handler.ts', {
      description: 'Sluice writer: one (dataset, window) to the customer bucket',
      // 1,769 MB is one full vCPU: gzip and JSON are CPU-bound.
      memorySize: 1769,
      timeout: Duration.minutes(4),
    });
    // The destination with its cursors and window progress (queries; a backfill of an export with children
    // also its parent's links), and the progress saved after each
    // file: a transaction of condition checks (the lease, the destination) and a put.
    // Backfill writers also add their files to the backfill record (UpdateItem) and read it when fenced out.
    useTable(writerFunction, 'SLUICE_CONTROL_TABLE', props.controlTable, [
      DDB.get,
      DDB.query,
      DDB.put,
      DDB.update,
      DDB.conditionCheck,
    ]);
    useTable(writerFunction, 'SLUICE_EVENTS_TABLE', props.eventsTable, [DDB.query]);
    useTable(writerFunction, 'SLUICE_SUBSCRIBERS_TABLE', props.subscribersTable, [DDB.query]);
    // The writer opens the destination's secret; it never seals one.
    useSecretsKey(writerFunction, ['kms:Decrypt']);
    // A role destination's files are written with the customer's role, assumed once per invocation.
    assumeCustomerRoles(writerFunction);
    // Hours the event log no longer holds whole are read from the archive, as far as its cursor says.
    useArchive(writerFunction, false);

    const dispatchFunction = fn('dispatch', 'DispatchFunction', 'dispatch', 'functions/dispatch/handler.ts', {
      description: 'Sluice dispatch: finds due destinations, settles those with nothing new',
      memorySize: 512,
      timeout: Duration.seconds(60),
    });
    // The due index, destinations and cursors (queries), the lease (get), settling a run that died holding
    // its lease (run record update; lease delete with the destination's update, one transaction), and
    // settling a destination with nothing new: fenced cursor advance (condition checks, updates), nextRunAt and run state (updates).
    useTable(
      dispatchFunction,
      'SLUICE_CONTROL_TABLE',
      props.controlTable,
      [DDB.get, DDB.query, DDB.update, DDB.delete, DDB.conditionCheck],
      ['due'],
    );
    useTable(dispatchFunction, 'SLUICE_EVENTS_TABLE', props.eventsTable, [DDB.query]);
    useTable(dispatchFunction, 'SLUICE_SUBSCRIBERS_TABLE', props.subscribersTable, [DDB.query]);
    // An export behind the event log has rows in the archive: its cursor (above) and a one-key listing.
    useArchive(dispatchFunction, false);

    // --- the event archive --------------------------------------------------------------------------
    const archiveFunction = fn('archive', 'ArchiveFunction', 'archive', 'functions/archive/handler.ts', {
      description: 'Sluice archive: compacts event log hours into the archive bucket before they expire',
      memorySize: 1769,
      timeout: Duration.minutes(15),
    });
    // Workspaces (a Scan of workspace items), archive cursors (get, conditional update).
    useTable(archiveFunction, 'SLUICE_CONTROL_TABLE', props.controlTable, [
      DDB.get,
      DDB.update,
      ['dynamodb:Scan'],
    ]);
    useTable(archiveFunction, 'SLUICE_EVENTS_TABLE', props.eventsTable, [DDB.query]);
    archiveFunction.addEnvironment('SLUICE_SUBSCRIBERS_TABLE', props.subscribersTable.tableName);
    useArchive(archiveFunction, true);
    // No retry of a failed compaction: the next one, 15 minutes later, continues from the cursors.
    new events.Rule(this, 'ArchiveSchedule', {
      description: 'Compacts settled event log hours into the event archive every 15 minutes',
      schedule: events.Schedule.rate(Duration.minutes(ARCHIVE_SCHEDULE_MINUTES)),
      targets: [new targets.LambdaFunction(archiveFunction, { retryAttempts: 0 })],
    });

    this.functions = {
      api: apiFunction,
      authorizer: authorizerFunction,
      ingest: ingestFunction,
      runControl: runControlFunction,
      writer: writerFunction,
      dispatch: dispatchFunction,
      archive: archiveFunction,
    };

    // --- workflows and the schedule ---------------------------------------------------------------
    // A retained group outlives its stack: its name then ends in this stack instance's id, so a stack
    // created again (after a delete) makes a new group instead of failing on the kept one's name.
    const stackInstance = Fn.select(2, Fn.split('/', Aws.STACK_ID));
    const workflowLogs = (id: string, name: string) =>
      new logs.LogGroup(this, id, {
        // Step Functions' advice: under /aws/vendedlogs/ the log delivery needs no growing resource policy
        // on the group (CloudWatch Logs caps those at 5,120 characters per region).
        logGroupName: settings.retainLogGroups
          ? `/aws/vendedlogs/states/sluice-${settings.stage}-${name}-${stackInstance}`
          : `/aws/vendedlogs/states/sluice-${settings.stage}-${name}`,
        retention: logRetention,
        removalPolicy: logRemovalPolicy,
      });
    // The level is a setting (`workflowLogLevel`): `ALL` logs every state transition of every execution, at
    // Express volumes as much as the executions themselves cost.
    const logLevel = sfn.LogLevel[settings.workflowLogLevel];
    this.exportRun = new ExportRunWorkflow(this, 'ExportRun', {
      runControlFunction,
      writerFunction,
      writerConcurrency: settings.writerConcurrency,
      logGroup: workflowLogs('ExportRunLogs', 'export-run'),
      logLevel,
      tracing: settings.tracing,
    });
    this.dispatch = new DispatchWorkflow(this, 'Dispatch', {
      dispatchFunction,
      exportRun: this.exportRun.stateMachine,
      logGroup: workflowLogs('DispatchLogs', 'dispatch'),
      logLevel,
      tracing: settings.tracing,
    });
    for (const machine of [this.exportRun.stateMachine, this.dispatch.stateMachine]) {
      if (logLevel !== sfn.LogLevel.ALL) {
        Validations.of(machine).acknowledge({
          id: 'AwsSolutions-SF1',
          reason:
            `Logs ${settings.workflowLogLevel}, not ALL, by the workflowLogLevel setting: ALL logs every state ` +
            'transition of every Express execution, about as much as the executions cost; failures are logged.',
        });
      }
      if (!settings.tracing) {
        Validations.of(machine).acknowledge({
          id: 'AwsSolutions-SF2',
          reason:
            'X-Ray tracing is off by the tracing setting (functions and state machines alike); ' +
            'the logs and metrics still show every failure.',
        });
      }
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
      tables: {
        control: watched(props.controlTable, CONTROL_TABLE),
        events: watched(props.eventsTable, EVENTS_TABLE),
        subscribers: watched(props.subscribersTable, SUBSCRIBERS_TABLE),
      },
      ingestFunction,
      functions: this.functions,
      httpApi: this.api.httpApi,
      ingestDeadLetterQueue: this.ingestDeadLetters,
      exportLagAlarmMinutes: settings.exportLagAlarmMinutes,
      ingestLagAlarmMinutes: settings.ingestLagAlarmMinutes,
      rejectedEventsAlarmThreshold: settings.rejectedEventsAlarmThreshold,
      archive: {
        function: archiveFunction,
        lagAlarmSeconds: archiveLagAlarmSeconds(settings.eventLogRetentionDays),
      },
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
    new CfnOutput(this, 'RoleAssumerArns', {
      value: [apiFunction.role!.roleArn, writerFunction.role!.roleArn].join(','),
      description:
        "The roles that assume customers' roles (API connection test, writer): the aws:PrincipalArn of the trust policy in docs/customer-buckets.md",
    });
    new CfnOutput(this, 'EventLogRetentionDays', {
      value: String(settings.eventLogRetentionDays),
      description: 'SLUICE_EVENT_RETENTION_DAYS for the CLI, so rows it writes expire like ingested ones',
    });
  }
}

/** A table and the global secondary indexes its spec declares, for the throttle alarm. */
function watched(table: dynamodb.ITable, spec: TableSpec): { table: dynamodb.ITable; indexes: string[] } {
  return { table, indexes: spec.globalIndexes.map((index) => index.indexName) };
}
