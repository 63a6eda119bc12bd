/**
 * The Lambda handlers as the local runtime runs them: the same factories `functions/<name>/handler.ts` use,
 * built from the local runtime's own environment (read here, once per call, validated by each function's
 * config) and with the one option only the local runtime passes: its own bucket's origin exempt from the
 * endpoint rules and from the lifecycle check, and no AWS STS (role destinations fail their connection test,
 * saying they need AWS). No
 * environment variable of a deployed function can set these options.
 */
import { LocalWorkflows, type LocalWorkflowsOptions, type WorkflowFunctions } from '@sluice/devstack';
import {
  createApiFunction,
  createArchiveFunction,
  createAuthorizerFunction,
  createDispatchFunction,
  createIngestFunction,
  type IngestDeadLetters,
  createRunControlFunction,
  createWriterFunction,
  type Env,
  readApiConfig,
  readArchiveConfig,
  readAuthorizerConfig,
  readDispatchConfig,
  readIngestConfig,
  readRunControlConfig,
  readWriterConfig,
} from '@sluice/functions';
import { loadWorkflowDefinitions } from './workflow-definitions.js';

/**
 * The origins the local runtime exempts from the endpoint rules: its own s3rver (`SLUICE_LOCAL_S3_ENDPOINT`,
 * plain http on 127.0.0.1), or none when it is not set.
 */
export function localAllowedEndpoints(env: Env): ReadonlySet<string> {
  const endpoint = env.SLUICE_LOCAL_S3_ENDPOINT;
  return new Set(endpoint ? [new URL(endpoint).origin] : []);
}

/** The archive bucket's endpoint locally: the s3rver of `SLUICE_LOCAL_S3_ENDPOINT`. */
function localArchive(env: Env): { localS3Endpoint?: string } {
  return env.SLUICE_LOCAL_S3_ENDPOINT ? { localS3Endpoint: env.SLUICE_LOCAL_S3_ENDPOINT } : {};
}

/**
 * The API's two functions, built for the local runtime. `checkLocalLifecycle` keeps the lifecycle check for the
 * local bucket (the contract suites, which test the warning a customer's bucket gets).
 */
export function localApiFunctions(env: Env = process.env, options: { checkLocalLifecycle?: boolean } = {}) {
  return {
    authorizer: createAuthorizerFunction(readAuthorizerConfig(env)),
    api: createApiFunction(readApiConfig(env), {
      allowedEndpoints: localAllowedEndpoints(env),
      assumeRoles: false,
      // s3rver keeps no lifecycle configuration: a warning about the local bucket's rules could not apply.
      withoutLifecycleCheck: options.checkLocalLifecycle ? new Set<string>() : localAllowedEndpoints(env),
    }),
  };
}

/** The workflows' three functions, built for the local runtime. */
export function localWorkflowFunctions(env: Env = process.env) {
  return {
    runControl: createRunControlFunction(readRunControlConfig(env)),
    writer: createWriterFunction(readWriterConfig(env), {
      allowedEndpoints: localAllowedEndpoints(env),
      assumeRoles: false,
      ...localArchive(env),
    }),
    dispatch: createDispatchFunction(readDispatchConfig(env), localArchive(env)),
  };
}

/** The archive compaction function, built for the local runtime (the scheduler runs it every 15 minutes). */
export function localArchiveFunction(env: Env = process.env) {
  return createArchiveFunction(readArchiveConfig(env), localArchive(env));
}

/** The ingest function, built for the local runtime: the buffer's event source mapping invokes it. */
export function localIngestFunction(deadLetters: IngestDeadLetters, env: Env = process.env) {
  return createIngestFunction(readIngestConfig(env), { deadLetters });
}

/** Options of {@link localWorkflows}: those of `LocalWorkflows`, with the app's definitions and handlers by default. */
export type LocalAppWorkflowsOptions = Omit<LocalWorkflowsOptions, 'definitions' | 'functions'> & {
  /** @default the definitions of the synthesized CDK app ({@link loadWorkflowDefinitions}) */
  definitions?: LocalWorkflowsOptions['definitions'];
  /** Replaces some or all functions. @default the real handlers ({@link localWorkflowFunctions}) */
  functions?: Partial<WorkflowFunctions>;
};

/**
 * The ExportRun and Dispatch workflows of this app, run locally: the synthesized CDK app's definitions and the real
 * handlers, built from `process.env` now (those not given), with the local bucket allow-listed.
 */
export async function localWorkflows(options: LocalAppWorkflowsOptions = {}): Promise<LocalWorkflows> {
  const definitions = options.definitions ?? (await loadWorkflowDefinitions());
  const given = options.functions ?? {};
  const missing = (['runControl', 'writer', 'dispatch'] as const).some((name) => given[name] === undefined);
  const loaded = missing ? (localWorkflowFunctions() as unknown as WorkflowFunctions) : undefined;
  const functions: WorkflowFunctions = {
    runControl: given.runControl ?? loaded!.runControl,
    writer: given.writer ?? loaded!.writer,
    dispatch: given.dispatch ?? loaded!.dispatch,
  };
  return LocalWorkflows.create({ ...options, definitions, functions });
}
