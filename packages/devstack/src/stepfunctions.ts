import { randomUUID } from 'node:crypto';

// aws-local-stepfunctions 3 calls Promise.withResolvers (Node 22+) inside every Task state. Without it on
// Node 20 each Task throws a TypeError that a States.ALL Catch would swallow as an ordinary failure, so it
// is installed here, before any state machine runs (the library only calls it at run time).
if (typeof (Promise as { withResolvers?: unknown }).withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', {
    configurable: true,
    writable: true,
    value: function withResolvers<T>() {
      let resolve!: (value: T | PromiseLike<T>) => void;
      let reject!: (reason?: unknown) => void;
      const promise = new Promise<T>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      return { promise, resolve, reject };
    },
  });
}

import {
  ExecutionError,
  ExecutionTimeoutError,
  type RunOptions,
  StateMachine,
  type StateMachineDefinition,
} from 'aws-local-stepfunctions';
import type { WorkflowDefinitions } from './template.js';

/** A JSON value, as state machine payloads are. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** What a Lambda handler receives as its second argument here (the fields handlers use). */
export interface LocalLambdaContext {
  functionName: string;
  functionVersion: string;
  invokedFunctionArn: string;
  memoryLimitInMB: string;
  awsRequestId: string;
  logGroupName: string;
  logStreamName: string;
  callbackWaitsForEmptyEventLoop: boolean;
  getRemainingTimeInMillis(): number;
  done(): void;
  fail(): void;
  succeed(): void;
}

/** A Lambda handler: `(event, context) => result`. */
export type LambdaHandler = (event: unknown, context: LocalLambdaContext) => Promise<unknown>;

/** The three Lambda functions the workflows call. */
export interface WorkflowFunctions {
  /** `functions/run-control/handler.ts`: ClaimAndPlan, Commit, RecordFailure. */
  runControl: LambdaHandler;
  /** `functions/writer/handler.ts`: WriteWindow. */
  writer: LambdaHandler;
  /** `functions/dispatch/handler.ts`: FindDueDestinations. */
  dispatch: LambdaHandler;
}

/** The Task state whose resource names each function; other Tasks on the same resource use it too. */
const ANCHOR_STATES: Record<keyof WorkflowFunctions, { workflow: keyof WorkflowDefinitions; state: string }> =
  {
    runControl: { workflow: 'exportRun', state: 'ClaimAndPlan' },
    writer: { workflow: 'exportRun', state: 'WriteWindow' },
    dispatch: { workflow: 'dispatch', state: 'FindDueDestinations' },
  };
/** Lambda timeouts the local context reports through `getRemainingTimeInMillis`. */
const FUNCTION_TIMEOUT_MS: Record<keyof WorkflowFunctions, number> = {
  runControl: 60_000,
  writer: 300_000,
  dispatch: 60_000,
};
/** Step Functions refuses a state's input or output above 256 KiB. */
const PAYLOAD_LIMIT_BYTES = 256 * 1024;
const START_EXECUTION_RESOURCE = 'arn:aws:states:::states:startExecution';

/** The error Step Functions reports: `Error` is the Lambda's errorType, `Cause` its JSON error. */
export interface StatesError {
  Error: string;
  Cause: string;
}

/**
 * Runs a Task state's local handler. `invoke` calls the real one; an interceptor may call it, change its
 * input or output, or throw instead (tests: a writer that fails after its first window).
 */
export type TaskInterceptor = (
  state: string,
  input: Json,
  invoke: (input: Json) => Promise<Json>,
) => Promise<Json>;

/** One ExportRun execution, as the local runner saw it end. */
export interface ExportRunOutcome {
  executionArn: string;
  input: Json;
  /** `skipped`: the lease was held or the destination paused/deleted before the run began. */
  status: 'succeeded' | 'stopped' | 'skipped' | 'failed';
  /** Why it was skipped (ClaimAndPlan's `reason`). */
  reason?: string;
  /** For failed runs: the Fail state's error, or the first writer failure Commit recorded. */
  error?: StatesError;
  /** Commit's `runAgain`: the destination is still behind. */
  runAgain: boolean;
  /** Windows and snapshots planned. */
  items: number;
  /** The datasets of the planned items, in plan order. */
  datasets: string[];
  /** From the execution's start to its end. */
  durationMs: number;
  rows: number;
  files: number;
  bytes: number;
  /** The execution's final state (ids, windows and counts). */
  output?: Json;
  /** The largest state input or output of the execution, in UTF-8 bytes (Step Functions allows 256 KiB). */
  largestStateBytes?: number;
}

/** One Dispatch execution and every ExportRun it started. */
export interface DispatchOutcome {
  executionArn: string;
  /** StartExportRun calls: the ExportRun executions it started, over every page. */
  started: number;
  /** The ExportRuns it started, all finished (none when {@link DispatchOptions.onStart} replaced them). */
  runs: ExportRunOutcome[];
  /** The largest state input or output of the execution, in UTF-8 bytes (Step Functions allows 256 KiB). */
  largestStateBytes: number;
}

/** Options of {@link LocalWorkflows.runDispatch}. */
export interface DispatchOptions {
  /**
   * Called with the input of each StartExportRun instead of running an ExportRun (tests and the bench count
   * starts without running thousands of exports).
   * @default each start runs the ExportRun definition locally
   */
  onStart?: (input: Json) => void | Promise<void>;
}

/** Options of {@link LocalWorkflows.create}. */
export interface LocalWorkflowsOptions {
  /** The two workflows (`npm start`'s `localWorkflows` brings the synthesized CDK app's). */
  definitions: WorkflowDefinitions;
  /** The Lambda handlers the Task states call (`npm start`'s `localWorkflows` brings the real ones). */
  functions: WorkflowFunctions;
  /** Wraps every Task handler call. */
  intercept?: TaskInterceptor;
  /**
   * Milliseconds to wait before each retry, by state name (aws-local-stepfunctions `retryIntervalOverrides`).
   * @default the definition's own backoff and jitter
   */
  retryIntervalOverrides?: Record<string, number | number[]>;
  /** Progress and task errors, one line each. @default nothing is logged */
  log?: (line: string) => void;
  /**
   * The ExportRun execution's `TimeoutSeconds` (tests: an execution that times out, as Express ends one at
   * five minutes: no Catch runs, the lease stays until it expires). @default the definition's own
   */
  exportRunTimeoutSeconds?: number;
}

const ACCOUNT = '000000000000';
const REGION = 'us-east-1';

/**
 * The ExportRun and Dispatch state machines of the synthesized template, run in-process by
 * aws-local-stepfunctions with each Task state calling a local Lambda handler:
 * ClaimAndPlan/Commit/RecordFailure → run-control, WriteWindow → writer, FindDueDestinations → dispatch (and
 * every other Task on the same resource as these), StartExportRun → a local ExportRun execution.
 *
 * Handlers see what Lambda would give them: a JSON copy of the input, a context; their errors reach the
 * definition's Retry and Catch as Step Functions reports a Lambda error (`Error` = the error's name,
 * `Cause` = `{"errorType","errorMessage"}` as JSON). A Task state without a local handler refuses to run
 * (the library would otherwise call AWS Lambda).
 */
export class LocalWorkflows {
  private readonly exportRunMachine: StateMachine;
  private readonly dispatchMachine: StateMachine;
  private readonly exportRunHandlers: Record<string, (input: Json) => Promise<Json>>;
  private readonly dispatchHandlers: Record<string, (input: Json) => Promise<Json>>;
  private readonly pending = new Set<Promise<ExportRunOutcome>>();

  private constructor(
    private readonly definitions: WorkflowDefinitions,
    private readonly functions: WorkflowFunctions,
    private readonly options: LocalWorkflowsOptions,
  ) {
    this.exportRunMachine = stateMachine(
      options.exportRunTimeoutSeconds === undefined
        ? definitions.exportRun
        : { ...definitions.exportRun, TimeoutSeconds: options.exportRunTimeoutSeconds },
    );
    this.dispatchMachine = stateMachine(definitions.dispatch);
    this.exportRunHandlers = this.taskHandlers('exportRun');
    this.dispatchHandlers = this.taskHandlers('dispatch');
  }

  /** Checks every Task state of the definitions has a handler. */
  static async create(options: LocalWorkflowsOptions): Promise<LocalWorkflows> {
    return new LocalWorkflows(options.definitions, options.functions, options);
  }

  /** Runs one ExportRun execution to its end (it never throws for a failed run: see `status`). */
  async runExportRun(input: {
    workspaceId: string;
    destinationId: string;
    trigger: string;
  }): Promise<ExportRunOutcome> {
    return this.track(this.executeExportRun(input as unknown as Json));
  }

  /**
   * Runs one Dispatch execution, then waits for every ExportRun it started (in AWS they run on their own;
   * waiting keeps ticks from overlapping and tests deterministic).
   */
  async runDispatch(options: DispatchOptions = {}): Promise<DispatchOutcome> {
    const executionArn = this.executionArn('Dispatch');
    const runs: Promise<ExportRunOutcome>[] = [];
    let started = 0;
    const startExportRun = async (parameters: Json): Promise<Json> => {
      // The startExecution parameters: { StateMachineArn, Input } (Input an object or a JSON string).
      const given = (parameters as { Input?: Json } | null)?.Input ?? null;
      const input = typeof given === 'string' ? (JSON.parse(given) as Json) : given;
      started += 1;
      if (options.onStart) await options.onStart(input);
      else runs.push(this.track(this.executeExportRun(input)));
      return { ExecutionArn: this.executionArn('ExportRun'), StartDate: new Date().toISOString() };
    };
    const handlers = { ...this.dispatchHandlers };
    for (const [state, resource] of taskStates(this.definitions.dispatch)) {
      if (resource === START_EXECUTION_RESOURCE) handlers[state] = startExportRun;
    }
    let largestStateBytes: number;
    try {
      ({ largestStateBytes } = await this.execute(this.dispatchMachine, {}, executionArn, handlers));
    } finally {
      // Runs already started keep going even when Dispatch failed after them; wait for them either way.
      await Promise.allSettled(runs);
    }
    return { executionArn, started, runs: await Promise.all(runs), largestStateBytes };
  }

  /** Resolves when every ExportRun started so far has ended. */
  async idle(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  private track(run: Promise<ExportRunOutcome>): Promise<ExportRunOutcome> {
    this.pending.add(run);
    void run.finally(() => this.pending.delete(run)).catch(() => undefined);
    return run;
  }

  private async executeExportRun(input: Json): Promise<ExportRunOutcome> {
    const executionArn = this.executionArn('ExportRun');
    const started = performance.now();
    try {
      const { output, largestStateBytes } = await this.execute(
        this.exportRunMachine,
        input,
        executionArn,
        this.exportRunHandlers,
      );
      return { ...summarize(executionArn, input, output, performance.now() - started), largestStateBytes };
    } catch (error) {
      const statesError = toStatesError(error);
      this.options.log?.(
        `ExportRun ${describe(input)} failed: ${statesError.Error}: ${causeMessage(statesError)}`,
      );
      return {
        executionArn,
        input,
        status: 'failed',
        error: statesError,
        runAgain: false,
        items: 0,
        datasets: [],
        durationMs: performance.now() - started,
        rows: 0,
        files: 0,
        bytes: 0,
      };
    }
  }

  private async execute(
    machine: StateMachine,
    input: Json,
    executionArn: string,
    handlers: Record<string, (input: Json) => Promise<Json>>,
  ): Promise<{ output: Json; largestStateBytes: number }> {
    const name = executionArn.split(':').at(-2) ?? randomUUID();
    const options: RunOptions = {
      overrides: {
        taskResourceLocalHandlers: handlers,
        ...(this.options.retryIntervalOverrides
          ? { retryIntervalOverrides: this.options.retryIntervalOverrides }
          : {}),
      },
      context: {
        Execution: { Id: executionArn, Name: name },
        StateMachine: {
          Id: executionArn.split(':').slice(0, 7).join(':').replace(':express:', ':stateMachine:'),
        },
      },
    };
    const execution = machine.run(input, options);
    const measuring = largestState(execution.eventLogs);
    const output = (await execution.result) as Json;
    const largestStateBytes = await measuring;
    // Step Functions fails the state that passes the limit; here the execution fails once it has ended.
    checkSize(largestStateBytes, 'of a state');
    return { output, largestStateBytes };
  }

  private executionArn(machine: 'ExportRun' | 'Dispatch'): string {
    return `arn:aws:states:${REGION}:${ACCOUNT}:express:Sluice${machine}:${randomUUID()}:${randomUUID()}`;
  }

  /** One local handler per Task state of a workflow, chosen by resource. */
  private taskHandlers(workflow: keyof WorkflowDefinitions): Record<string, (input: Json) => Promise<Json>> {
    const definition = this.definitions[workflow];
    const tasks = taskStates(definition);
    const byResource = new Map<string, keyof WorkflowFunctions>();
    for (const [fn, anchor] of Object.entries(ANCHOR_STATES) as [
      keyof WorkflowFunctions,
      { workflow: string; state: string },
    ][]) {
      if (anchor.workflow !== workflow) continue;
      const resource = tasks.get(anchor.state);
      if (resource === undefined)
        throw new Error(`the ${workflow} definition has no Task state ${anchor.state}`);
      byResource.set(resource, fn);
    }
    const handlers: Record<string, (input: Json) => Promise<Json>> = {};
    for (const [state, resource] of tasks) {
      if (resource === START_EXECUTION_RESOURCE) {
        // Replaced per Dispatch execution (runDispatch); never reaches AWS.
        handlers[state] = async () => {
          throw new Error(`${state} runs only inside runDispatch`);
        };
        continue;
      }
      const fn = byResource.get(resource);
      if (fn === undefined) {
        throw new Error(
          `no local handler for Task state ${state} (${resource}) of the ${workflow} definition`,
        );
      }
      handlers[state] = (input) => this.invoke(state, fn, input);
    }
    return handlers;
  }

  private async invoke(state: string, fn: keyof WorkflowFunctions, input: Json): Promise<Json> {
    const call = (payload: Json) => invokeLambda(fn, this.functions[fn], payload);
    try {
      return this.options.intercept ? await this.options.intercept(state, input, call) : await call(input);
    } catch (thrown) {
      // An interceptor's own error reaches the definition as a Lambda error would, too.
      const error = thrown instanceof Error && LAMBDA_ERROR in thrown ? thrown : lambdaError(thrown);
      const e = error as Error;
      this.options.log?.(
        `${state} ${describe(input)}: ${e.name}: ${causeMessage({ Error: e.name, Cause: e.message })}`,
      );
      throw error;
    }
  }
}

/** Definitions already validated in this process (asl-validator takes seconds per definition). */
const validated = new Set<string>();

/** A state machine of `definition`, validated by aws-local-stepfunctions the first time it is seen. */
function stateMachine(definition: StateMachineDefinition): StateMachine {
  const text = JSON.stringify(definition);
  const machine = new StateMachine(definition, { validationOptions: { noValidate: validated.has(text) } });
  validated.add(text);
  return machine;
}

/** Calls a handler as Lambda would: JSON in, JSON out, errors as Step Functions reports them. */
async function invokeLambda(
  fn: keyof WorkflowFunctions,
  handler: LambdaHandler,
  payload: Json,
): Promise<Json> {
  const event = JSON.parse(checkSize(JSON.stringify(payload), 'input')) as Json;
  const deadline = Date.now() + FUNCTION_TIMEOUT_MS[fn];
  const requestId = randomUUID();
  const context: LocalLambdaContext = {
    functionName: `sluice-local-${fn}`,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${REGION}:${ACCOUNT}:function:sluice-local-${fn}`,
    memoryLimitInMB: '1024',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/sluice-local-${fn}`,
    logStreamName: `local/${requestId}`,
    callbackWaitsForEmptyEventLoop: false,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
  let result: unknown;
  try {
    result = await handler(event, context);
  } catch (error) {
    throw lambdaError(error);
  }
  const text = result === undefined ? 'null' : JSON.stringify(result);
  return JSON.parse(checkSize(text, 'output')) as Json;
}

/** Throws `States.DataLimitExceeded` when `size` (a text, or its UTF-8 byte count) is over 256 KiB. */
function checkSize<T extends string | number>(size: T, what: string): T {
  if ((typeof size === 'number' ? size : Buffer.byteLength(size)) > PAYLOAD_LIMIT_BYTES) {
    const error = new Error(`the state ${what} is over Step Functions' 256 KiB limit`);
    error.name = 'States.DataLimitExceeded';
    throw error;
  }
  return size;
}

/**
 * The largest state input or output among an execution's events (Map iterations included), in UTF-8 bytes.
 * Reading the events as they come also keeps the library from queueing them all until the end.
 */
async function largestState(events: ReturnType<StateMachine['run']>['eventLogs']): Promise<number> {
  let largest = 0;
  for await (const event of events) {
    if (event.type !== 'StateEntered' && event.type !== 'StateExited') continue;
    largest = Math.max(largest, Buffer.byteLength(JSON.stringify(event.state.input ?? null)));
    if (event.type === 'StateExited') {
      largest = Math.max(largest, Buffer.byteLength(JSON.stringify(event.state.output ?? null)));
    }
  }
  return largest;
}

/** Marks an error already shaped as Step Functions reports a Lambda error. */
const LAMBDA_ERROR = Symbol('lambdaError');

/** The error Step Functions would see from a Lambda that threw `error`. */
function lambdaError(error: unknown): Error {
  const errorType = error instanceof Error ? error.name || 'Error' : 'Error';
  const errorMessage = error instanceof Error ? error.message : String(error);
  const wrapped = new Error(JSON.stringify({ errorType, errorMessage }));
  wrapped.name = errorType;
  Object.defineProperty(wrapped, LAMBDA_ERROR, { value: true });
  return wrapped;
}

function toStatesError(error: unknown): StatesError {
  // An execution past its TimeoutSeconds: Step Functions ends it as TIMED_OUT with States.Timeout.
  if (error instanceof ExecutionTimeoutError)
    return { Error: 'States.Timeout', Cause: 'The execution timed out.' };
  const inner = error instanceof ExecutionError && error.cause instanceof Error ? error.cause : error;
  if (inner instanceof Error) return { Error: inner.name, Cause: inner.message };
  return { Error: 'Error', Cause: String(inner) };
}

/** The human part of a Cause: the Lambda's errorMessage when it is one. */
export function causeMessage(error: StatesError): string {
  try {
    const parsed = JSON.parse(error.Cause) as { errorMessage?: unknown };
    if (typeof parsed.errorMessage === 'string') return parsed.errorMessage;
  } catch {
    // not JSON: a States.* error's plain message
  }
  return error.Cause;
}

function describe(input: Json): string {
  const record = (input ?? {}) as Record<string, Json>;
  const run = (record.run ?? record) as Record<string, Json>;
  const item = record.item as Record<string, Json> | undefined;
  const where = [run.workspaceId, run.destinationId].filter((v) => typeof v === 'string').join('/');
  const what = item
    ? ` ${String(item.dataset)} ${item.date ?? `${String(item.fromMs)}-${String(item.toMs)}`}`
    : '';
  return `${where}${what}`;
}

/** Task state name → resource, across the definition and its Map/Parallel processors. */
export function taskStates(definition: StateMachineDefinition): Map<string, string> {
  const found = new Map<string, string>();
  const visit = (states: StateMachineDefinition['States']) => {
    for (const [name, state] of Object.entries(states)) {
      if (state.Type === 'Task') found.set(name, state.Resource);
      if (state.Type === 'Map') {
        const processor = state.ItemProcessor ?? state.Iterator;
        if (processor) visit(processor.States);
      }
      if (state.Type === 'Parallel') for (const branch of state.Branches) visit(branch.States);
    }
  };
  visit(definition.States);
  return found;
}

function summarize(executionArn: string, input: Json, output: Json, durationMs: number): ExportRunOutcome {
  const state = (output ?? {}) as {
    plan?: { outcome?: string; reason?: string; items?: { dataset?: unknown }[] };
    results?: { status?: string; rows?: number; files?: number; bytes?: number; error?: StatesError }[];
    commit?: { status?: string; runAgain?: boolean };
  };
  const results = Array.isArray(state.results) ? state.results : [];
  // A writer that failed after its retries: its Map item's result, recorded by Commit.
  const failed = results.find((r) => r.status === 'failed')?.error;
  const sum = (key: 'rows' | 'files' | 'bytes') =>
    results.reduce((total, r) => total + (typeof r[key] === 'number' ? r[key] : 0), 0);
  const planned = state.plan?.outcome === 'planned';
  const items = Array.isArray(state.plan?.items) ? state.plan.items : [];
  const datasets = [
    ...new Set(items.flatMap((item) => (typeof item?.dataset === 'string' ? [item.dataset] : []))),
  ];
  return {
    executionArn,
    input,
    status: !planned
      ? 'skipped'
      : state.commit?.status === 'stopped'
        ? 'stopped'
        : state.commit?.status === 'failed'
          ? 'failed'
          : 'succeeded',
    ...(state.plan?.reason !== undefined ? { reason: state.plan.reason } : {}),
    ...(state.commit?.status === 'failed' && failed !== undefined ? { error: failed } : {}),
    runAgain: state.commit?.runAgain === true,
    items: items.length,
    datasets,
    durationMs,
    rows: sum('rows'),
    files: sum('files'),
    bytes: sum('bytes'),
    output,
  };
}
