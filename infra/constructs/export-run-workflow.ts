import { TRANSIENT_ERROR_NAMES } from '@sluice/engine';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { Construct } from 'constructs';

/**
 * Metadata key set on each workflow's `AWS::StepFunctions::StateMachine` resource, so the local runtime finds
 * the definitions in the synthesized template whatever the construct ids are.
 */
export const WORKFLOW_METADATA_KEY = 'sluice:workflow';

/** Longest an Express execution may run; every task and the whole run fit inside it. */
const EXPRESS_MAX = Duration.minutes(5);

/** Props of {@link ExportRunWorkflow}. */
export interface ExportRunWorkflowProps {
  /** The run-control Lambda (`functions/run-control/handler.ts`): claimAndPlan, commit, recordFailure. */
  readonly runControlFunction: lambda.IFunction;
  /** The writer Lambda (`functions/writer/handler.ts`): one (dataset, window) item per invocation. */
  readonly writerFunction: lambda.IFunction;
  /** How many writer invocations one run makes at once (the inline Map runs at most 40). */
  readonly writerConcurrency: number;
  /**
   * Where the execution history goes (Express keeps none of its own).
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
   * Error names retried with backoff and jitter; any other error fails the run at once.
   * @default TRANSIENT_ERROR_NAMES of `@sluice/engine` (bucket, DynamoDB and Lambda service errors)
   */
  readonly transientErrorNames?: readonly string[];
}

/**
 * The ExportRun state machine (docs: the state machines and the cost reasoning in
 * `docs/internals.md`): claim the destination's lease and plan, write every (dataset, window) item through
 * the writer Lambda with bounded concurrency, commit the cursors; any failure is recorded and fails the run.
 *
 * Input `{ workspaceId, destinationId, trigger }`; the trigger `backfill` makes the same states run a
 * backfill's next part (`@sluice/engine` `backfill.ts`: its own slot, progress and record). States:
 * 1. `ClaimAndPlan` (run-control) → `$.plan = { outcome, reason?, run?, items? }`;
 * 2. `HasWork`: `planned` goes on, anything else (lease held, paused, deleted) ends in `Skipped`;
 * 3. `WriteWindows`: inline Map over `$.plan.items` (spans of windows, the snapshot), each iteration
 *    `{ run, item }` to `WriteWindow` (writer), results in `$.results`; an item that fails after its
 *    retries is caught into `WindowFailed`, `{ status: 'failed', item, error }`, so one window's failure
 *    never throws away the others;
 * 4. `Commit` (run-control) `{ run, results }` → `$.commit = { status, runAgain }`: commits what was
 *    written and records a writer failure;
 * 5. failures of the tasks themselves: `RecordFailure` `{ workspaceId, destinationId, run, error }` after
 *    planning, or `RecordClaimFailure` (same action, no run) when the claim itself failed, then `Failed`.
 *
 * Only ids, windows and counts travel in the payloads: never a row, never a secret (the writer reads the
 * destination and decrypts its secret itself).
 *
 * Written in JSONPath only, with an inline Map and no `Assign`, so that `aws-local-stepfunctions` runs the
 * very definition synthesized here (`packages/devstack/src/stepfunctions.ts`).
 */
export class ExportRunWorkflow extends Construct {
  /** The Express state machine. */
  readonly stateMachine: sfn.StateMachine;
  /** Its log group. */
  readonly logGroup: logs.ILogGroup;

  constructor(scope: Construct, id: string, props: ExportRunWorkflowProps) {
    super(scope, id);
    if (
      !Number.isInteger(props.writerConcurrency) ||
      props.writerConcurrency < 1 ||
      props.writerConcurrency > 40
    ) {
      throw new Error(`writerConcurrency must be an integer from 1 to 40, got ${props.writerConcurrency}`);
    }
    const transient = [...(props.transientErrorNames ?? TRANSIENT_ERROR_NAMES)];
    const retryTransient = (task: sfn.TaskStateBase, attempts: number): void => {
      // Backoff 2 s, 4 s, 8 s ... with full jitter, so writers of many destinations hitting one throttled
      // bucket do not retry in step. Permanent errors (no bucket, access denied, wrong region, unknown
      // key) are not in the list: they go straight to the Catch and fail the run with their message.
      task.addRetry({
        errors: transient,
        interval: Duration.seconds(2),
        backoffRate: 2,
        maxAttempts: attempts,
        maxDelay: Duration.seconds(30),
        jitterStrategy: sfn.JitterType.FULL,
      });
    };
    const invoke = (
      name: string,
      fn: lambda.IFunction,
      payload: Record<string, unknown>,
      resultPath: string | undefined,
      timeout: Duration,
    ): tasks.LambdaInvoke =>
      new tasks.LambdaInvoke(this, name, {
        stateName: name,
        lambdaFunction: fn,
        // The direct function ARN resource: the Lambda's own result is the task result, no SDK envelope.
        payloadResponseOnly: true,
        // Lambda service errors are in the transient list, retried below with jitter.
        retryOnServiceExceptions: false,
        payload: sfn.TaskInput.fromObject(payload),
        resultPath,
        taskTimeout: sfn.Timeout.duration(timeout),
      });

    const failed = new sfn.Fail(this, 'Failed', {
      stateName: 'Failed',
      comment:
        'The failure is recorded on the destination and the run; failing here counts it in CloudWatch.',
      errorPath: '$.error.Error',
      causePath: '$.error.Cause',
    });
    const recordFailure = invoke(
      'RecordFailure',
      props.runControlFunction,
      {
        action: 'recordFailure',
        workspaceId: sfn.JsonPath.stringAt('$.workspaceId'),
        destinationId: sfn.JsonPath.stringAt('$.destinationId'),
        trigger: sfn.JsonPath.stringAt('$.trigger'),
        run: sfn.JsonPath.objectAt('$.plan.run'),
        error: sfn.JsonPath.objectAt('$.error'),
      },
      '$.recorded',
      Duration.seconds(60),
    );
    retryTransient(recordFailure, 5);
    // RecordFailure failing too ends the run as failed all the same; the lease it could not release
    // expires, and dispatch then settles the run (failed, backoff): nothing stays `running`.
    recordFailure.addCatch(failed, { errors: [sfn.Errors.ALL], resultPath: '$.recordError' });
    recordFailure.next(failed);
    const recordClaimFailure = invoke(
      'RecordClaimFailure',
      props.runControlFunction,
      {
        action: 'recordFailure',
        workspaceId: sfn.JsonPath.stringAt('$.workspaceId'),
        destinationId: sfn.JsonPath.stringAt('$.destinationId'),
        trigger: sfn.JsonPath.stringAt('$.trigger'),
        error: sfn.JsonPath.objectAt('$.error'),
      },
      '$.recorded',
      Duration.seconds(60),
    );
    retryTransient(recordClaimFailure, 5);
    recordClaimFailure.addCatch(failed, { errors: [sfn.Errors.ALL], resultPath: '$.recordError' });
    recordClaimFailure.next(failed);

    const claimAndPlan = invoke(
      'ClaimAndPlan',
      props.runControlFunction,
      {
        action: 'claimAndPlan',
        workspaceId: sfn.JsonPath.stringAt('$.workspaceId'),
        destinationId: sfn.JsonPath.stringAt('$.destinationId'),
        trigger: sfn.JsonPath.stringAt('$.trigger'),
        executionId: sfn.JsonPath.stringAt('$$.Execution.Id'),
      },
      '$.plan',
      Duration.seconds(60),
    );
    retryTransient(claimAndPlan, 4);
    claimAndPlan.addCatch(recordClaimFailure, { errors: [sfn.Errors.ALL], resultPath: '$.error' });

    const writeWindow = invoke(
      'WriteWindow',
      props.writerFunction,
      {
        run: sfn.JsonPath.objectAt('$.run'),
        item: sfn.JsonPath.objectAt('$.item'),
      },
      undefined, // the iteration's result is the WindowResult itself
      EXPRESS_MAX,
    );
    retryTransient(writeWindow, 4);
    // A window that still fails after its retries becomes this item's result, so the Map never fails: the
    // other items' windows are committed, and Commit records the failure (message, backoff).
    const windowFailed = new sfn.Pass(this, 'WindowFailed', {
      stateName: 'WindowFailed',
      parameters: {
        status: 'failed',
        item: sfn.JsonPath.objectAt('$.item'),
        error: sfn.JsonPath.objectAt('$.error'),
      },
    });
    writeWindow.addCatch(windowFailed, { errors: [sfn.Errors.ALL], resultPath: '$.error' });
    const writeWindows = new sfn.Map(this, 'WriteWindows', {
      stateName: 'WriteWindows',
      itemsPath: '$.plan.items',
      itemSelector: {
        run: sfn.JsonPath.objectAt('$.plan.run'),
        item: sfn.JsonPath.objectAt('$$.Map.Item.Value'),
      },
      maxConcurrency: props.writerConcurrency,
      resultPath: '$.results',
    });
    writeWindows.itemProcessor(writeWindow);
    // Only what no item can catch (a state over its size limit) fails the Map.
    writeWindows.addCatch(recordFailure, { errors: [sfn.Errors.ALL], resultPath: '$.error' });

    const commit = invoke(
      'Commit',
      props.runControlFunction,
      {
        action: 'commit',
        run: sfn.JsonPath.objectAt('$.plan.run'),
        results: sfn.JsonPath.objectAt('$.results'),
      },
      '$.commit',
      Duration.seconds(60),
    );
    retryTransient(commit, 4);
    commit.addCatch(recordFailure, { errors: [sfn.Errors.ALL], resultPath: '$.error' });

    const hasWork = new sfn.Choice(this, 'HasWork', { stateName: 'HasWork' })
      .when(sfn.Condition.stringEquals('$.plan.outcome', 'planned'), writeWindows.next(commit))
      .otherwise(
        new sfn.Succeed(this, 'Skipped', {
          stateName: 'Skipped',
          comment: 'Another live run holds the lease, or the destination is paused or deleted.',
        }),
      );

    this.logGroup =
      props.logGroup ??
      new logs.LogGroup(this, 'Logs', {
        retention: logs.RetentionDays.ONE_MONTH,
        removalPolicy: RemovalPolicy.RETAIN,
      });

    // Express, not Standard (DESIGN.md "Orchestration and cost"): an every_5_minutes destination with three
    // datasets starts up to 25,920 runs a month; at about 10 transitions a run Standard costs $6.71 a
    // destination-month, Express about $0.30 (and Dispatch starts no run at all when nothing is new). Express
    // executions are at-least-once and their names do not deduplicate: the lease token and the expected old
    // cursor on every commit make a duplicate execution harmless (it is skipped or its commit is refused).
    // Runs are time-boxed well inside Express's five minutes: the plan takes at most what fits, and a
    // destination still behind is due again at once.
    this.stateMachine = new sfn.StateMachine(this, 'StateMachine', {
      definitionBody: sfn.DefinitionBody.fromChainable(claimAndPlan.next(hasWork)),
      stateMachineType: sfn.StateMachineType.EXPRESS,
      timeout: EXPRESS_MAX,
      tracingEnabled: props.tracing ?? true,
      // ALL events, but never the execution data: payloads carry only ids and windows, still they stay
      // out of the logs.
      logs: {
        destination: this.logGroup,
        level: props.logLevel ?? sfn.LogLevel.ALL,
        includeExecutionData: false,
      },
      comment: 'Sluice ExportRun: claim and plan, write windows, commit; failures recorded and backed off.',
    });
    (this.stateMachine.node.defaultChild as sfn.CfnStateMachine).addMetadata(
      WORKFLOW_METADATA_KEY,
      'ExportRun',
    );
  }
}
