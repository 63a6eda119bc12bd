import { TRANSIENT_ERROR_NAMES } from '@sluice/engine';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { Construct } from 'constructs';
import { WORKFLOW_METADATA_KEY } from './export-run-workflow.js';

/** Props of {@link DispatchWorkflow}. */
export interface DispatchWorkflowProps {
  /** The dispatch Lambda (`functions/dispatch/handler.ts`): `{ action: 'findDue', now, next? }`. */
  readonly dispatchFunction: lambda.IFunction;
  /** The ExportRun state machine it starts, one execution per due destination. */
  readonly exportRun: sfn.IStateMachine;
  /**
   * Where the execution history goes.
   * @default a new log group kept one month
   */
  readonly logGroup?: logs.ILogGroup;
  /**
   * Which events go to the log group (`ALL` logs every state transition; at Express volumes that costs as
   * much as the executions). Never the execution data. @default sfn.LogLevel.ALL
   */
  readonly logLevel?: sfn.LogLevel;
  /** X-Ray tracing of the executions. @default true */
  readonly tracing?: boolean;
  /**
   * How many ExportRun executions are started at once (an inline Map runs at most 40 iterations at once).
   * @default 40
   */
  readonly startConcurrency?: number;
}

/**
 * The Dispatch state machine, started every minute by the schedule (its input is ignored). It pages through
 * the due index, so no state grows with the number of due destinations:
 * 1. `FindDueDestinations` (dispatch Lambda) `{ action: 'findDue', now: $$.Execution.StartTime }` →
 *    `{ destinations: [{ workspaceId, destinationId, trigger }], next? }`: one page of at most
 *    `DISPATCH_PAGE_SIZE` (250) due destinations. The Lambda settles those with nothing new itself (cursors
 *    and `nextRunAt` advance without any workflow), marks the others dispatched and returns them;
 * 2. `StartExportRuns`: Map over them with `StartExportRun`, an asynchronous `states:startExecution` of
 *    ExportRun whose input is the item (ids only), `startConcurrency` at once;
 * 3. `MorePages` (Choice): while `next` is present, `FindMoreDueDestinations` (the same Lambda with
 *    `next`) reads the following page and goes back to 2; otherwise `Dispatched`.
 * The state is one page at a time: at most ~115 KB with 200-character ids, ~35 KB with usual ones, whatever
 * the number of due destinations (Step Functions' limit is 256 KB).
 *
 * Fitting the tick on AWS, worst case: 20,000 destinations due in the same minute and all started.
 * - A page: FindDue examines 250 destinations 50 at once (`DISPATCH_CONCURRENCY`), each 2 (queued) to 8
 *   (nothing new) sequential DynamoDB calls of ~5 ms: 5 rounds × ≤ 40 ms ≈ 0.2 s, plus the invoke;
 *   the Map starts 250 executions 40 at once at ~50 ms a start: ≈ 0.3 s. About 0.55 s a page.
 * - 20,000 due: 80 pages ≈ 45 s, inside the 1-minute tick. The 5-minute timeout (Express's maximum) leaves
 *   room for a backlog of about 100,000 (after an outage); a tick that overlaps the next one is harmless
 *   (a destination is marked dispatched by one conditional write, so only one execution starts it), and a
 *   Dispatch cut short leaves the rest due for the next tick.
 * - StartExecution on Express: bucket 6,000, refill 6,000/s per account and region; this starts at most
 *   40 / 0.05 s = 800/s. Express state transitions are not throttled.
 * - DynamoDB: ≤ 8 calls × 20,000 = 160,000 requests in ~45 s ≈ 3,600/s on the on-demand table; the marks are
 *   20,000 item writes (≤ 450/s, under a partition's 1,000 WCU even if one workspace held them all) and
 *   40,000 index writes spread over the `DUE_INDEX_SHARDS` (4) partitions, ≈ 220/s each.
 * - With the stable slot offsets (`nextSlotAfter`) 20,000 `every_15_minutes` destinations are ~1,333 a tick
 *   (≈ 3 s) and `every_5_minutes` ones ~4,000 (≈ 9 s); 20,000 at once happens only when they are all queued.
 *
 * Express for the same reason as ExportRun: it runs 43,200 times a month whatever the load.
 */
export class DispatchWorkflow extends Construct {
  /** The Express state machine. */
  readonly stateMachine: sfn.StateMachine;
  /** Its log group. */
  readonly logGroup: logs.ILogGroup;

  constructor(scope: Construct, id: string, props: DispatchWorkflowProps) {
    super(scope, id);
    const findDue = this.findDueTask('FindDueDestinations', props.dispatchFunction, {});
    const findMoreDue = this.findDueTask('FindMoreDueDestinations', props.dispatchFunction, {
      next: sfn.JsonPath.stringAt('$.next'),
    });

    const startExportRun = new tasks.StepFunctionsStartExecution(this, 'StartExportRun', {
      stateName: 'StartExportRun',
      stateMachine: props.exportRun,
      // Asynchronous: Dispatch does not wait for the runs (each is time-boxed and records its own outcome).
      integrationPattern: sfn.IntegrationPattern.REQUEST_RESPONSE,
      input: sfn.TaskInput.fromObject({
        workspaceId: sfn.JsonPath.stringAt('$.workspaceId'),
        destinationId: sfn.JsonPath.stringAt('$.destinationId'),
        trigger: sfn.JsonPath.stringAt('$.trigger'),
      }),
      resultPath: sfn.JsonPath.DISCARD,
      taskTimeout: sfn.Timeout.duration(Duration.seconds(30)),
    });
    // A start that failed is retried; one started twice is harmless (the lease lets one run through).
    startExportRun.addRetry({
      errors: ['StepFunctions.SdkClientException', 'StepFunctions.StepFunctionsException', 'States.Timeout'],
      interval: Duration.seconds(1),
      backoffRate: 2,
      maxAttempts: 3,
      jitterStrategy: sfn.JitterType.FULL,
    });

    const startExportRuns = new sfn.Map(this, 'StartExportRuns', {
      stateName: 'StartExportRuns',
      itemsPath: '$.destinations',
      maxConcurrency: props.startConcurrency ?? 40,
      resultPath: sfn.JsonPath.DISCARD,
    });
    startExportRuns.itemProcessor(startExportRun);
    findMoreDue.next(startExportRuns);
    const morePages = new sfn.Choice(this, 'MorePages', { stateName: 'MorePages' })
      .when(sfn.Condition.isPresent('$.next'), findMoreDue)
      .otherwise(new sfn.Succeed(this, 'Dispatched', { stateName: 'Dispatched' }));

    this.logGroup =
      props.logGroup ??
      new logs.LogGroup(this, 'Logs', {
        retention: logs.RetentionDays.ONE_MONTH,
        removalPolicy: RemovalPolicy.RETAIN,
      });

    this.stateMachine = new sfn.StateMachine(this, 'StateMachine', {
      definitionBody: sfn.DefinitionBody.fromChainable(findDue.next(startExportRuns).next(morePages)),
      stateMachineType: sfn.StateMachineType.EXPRESS,
      timeout: Duration.minutes(5),
      tracingEnabled: props.tracing ?? true,
      logs: {
        destination: this.logGroup,
        level: props.logLevel ?? sfn.LogLevel.ALL,
        includeExecutionData: false,
      },
      comment:
        'Sluice Dispatch: page through the due destinations, start one ExportRun for each that has new rows.',
    });
    // StepFunctionsStartExecution adds states:StartExecution on ExportRun to this role; made explicit here.
    props.exportRun.grantStartExecution(this.stateMachine);
    (this.stateMachine.node.defaultChild as sfn.CfnStateMachine).addMetadata(
      WORKFLOW_METADATA_KEY,
      'Dispatch',
    );
  }

  /** A FindDue Task: one page of the due index, `now` the execution's start for every page. */
  private findDueTask(
    stateName: string,
    dispatchFunction: lambda.IFunction,
    extra: Record<string, string>,
  ): tasks.LambdaInvoke {
    const task = new tasks.LambdaInvoke(this, stateName, {
      stateName,
      lambdaFunction: dispatchFunction,
      payloadResponseOnly: true,
      retryOnServiceExceptions: false, // retried below, with jitter
      payload: sfn.TaskInput.fromObject({
        action: 'findDue',
        now: sfn.JsonPath.stringAt('$$.Execution.StartTime'),
        ...extra,
      }),
      taskTimeout: sfn.Timeout.duration(Duration.seconds(60)),
    });
    // The one list of transient errors (Lambda service errors, a throttled database, ...): a page retried reads
    // on from the same token, and destinations it already marked have left the due range. Anything else waits
    // for the next tick.
    task.addRetry({
      errors: [...TRANSIENT_ERROR_NAMES],
      interval: Duration.seconds(1),
      backoffRate: 2,
      maxAttempts: 3,
      jitterStrategy: sfn.JitterType.FULL,
    });
    return task;
  }
}
