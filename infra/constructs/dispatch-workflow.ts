import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { Construct } from 'constructs';
import { WORKFLOW_METADATA_KEY } from './export-run-workflow.js';

/** Props of {@link DispatchWorkflow}. */
export interface DispatchWorkflowProps {
  /** The dispatch Lambda (`functions/dispatch/handler.ts`): `{ action: 'findDue', now }`. */
  readonly dispatchFunction: lambda.IFunction;
  /** The ExportRun state machine it starts, one execution per due destination. */
  readonly exportRun: sfn.IStateMachine;
  /**
   * Where the execution history goes.
   * @default a new log group kept one month
   */
  readonly logGroup?: logs.ILogGroup;
  /**
   * How many ExportRun executions are started at once.
   * @default 10
   */
  readonly startConcurrency?: number;
}

/**
 * The Dispatch state machine, started every minute by the schedule (its input is ignored):
 * 1. `FindDueDestinations` (dispatch Lambda) `{ action: 'findDue', now: $$.Execution.StartTime }` →
 *    `{ destinations: [{ workspaceId, destinationId, trigger }] }`. The Lambda settles destinations with
 *    nothing new itself (cursors and `nextRunAt` advance without any workflow) and returns only the rest;
 * 2. `StartExportRuns`: Map over them with `StartExportRun`, an asynchronous `states:startExecution` of
 *    ExportRun whose input is the item (ids only).
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
    const findDue = new tasks.LambdaInvoke(this, 'FindDueDestinations', {
      stateName: 'FindDueDestinations',
      lambdaFunction: props.dispatchFunction,
      payloadResponseOnly: true,
      retryOnServiceExceptions: false, // retried below, with jitter
      payload: sfn.TaskInput.fromObject({
        action: 'findDue',
        now: sfn.JsonPath.stringAt('$$.Execution.StartTime'),
      }),
      taskTimeout: sfn.Timeout.duration(Duration.seconds(60)),
    });
    // Lambda service errors only: the next tick, a minute later, retries anything else.
    findDue.addRetry({
      errors: [
        'Lambda.ServiceException',
        'Lambda.AWSLambdaException',
        'Lambda.SdkClientException',
        'Lambda.TooManyRequestsException',
      ],
      interval: Duration.seconds(1),
      backoffRate: 2,
      maxAttempts: 3,
      jitterStrategy: sfn.JitterType.FULL,
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
      maxConcurrency: props.startConcurrency ?? 10,
      resultPath: sfn.JsonPath.DISCARD,
    });
    startExportRuns.itemProcessor(startExportRun);

    this.logGroup =
      props.logGroup ??
      new logs.LogGroup(this, 'Logs', {
        retention: logs.RetentionDays.ONE_MONTH,
        removalPolicy: RemovalPolicy.RETAIN,
      });

    this.stateMachine = new sfn.StateMachine(this, 'StateMachine', {
      definitionBody: sfn.DefinitionBody.fromChainable(findDue.next(startExportRuns)),
      stateMachineType: sfn.StateMachineType.EXPRESS,
      timeout: Duration.minutes(2),
      tracingEnabled: true,
      logs: { destination: this.logGroup, level: sfn.LogLevel.ALL, includeExecutionData: false },
      comment: 'Sluice Dispatch: find due destinations, start one ExportRun for each that has new rows.',
    });
    // StepFunctionsStartExecution adds states:StartExecution on ExportRun to this role; made explicit here.
    props.exportRun.grantStartExecution(this.stateMachine);
    (this.stateMachine.node.defaultChild as sfn.CfnStateMachine).addMetadata(
      WORKFLOW_METADATA_KEY,
      'Dispatch',
    );
  }
}
