/**
 * The Lambda handlers as the local runtime runs them: the same factories `functions/<name>/handler.ts` use,
 * built from the local runtime's own environment (read here, once per call, validated by each function's
 * config) and with the one option only the local runtime passes: its own bucket's origin exempt from the
 * endpoint rules and from the lifecycle check, and no AWS STS (role destinations fail their connection test,
 * saying they need AWS). No
 * environment variable of a deployed function can set these options.
 */
import { readApiConfig } from '../../../functions/api/config.js';
import { createApiFunction } from '../../../functions/api/function.js';
import { readArchiveConfig } from '../../../functions/archive/config.js';
import { createArchiveFunction } from '../../../functions/archive/function.js';
import { readAuthorizerConfig } from '../../../functions/authorizer/config.js';
import { createAuthorizerFunction } from '../../../functions/authorizer/function.js';
import { readDispatchConfig } from '../../../functions/dispatch/config.js';
import { createDispatchFunction } from '../../../functions/dispatch/function.js';
import type { Env } from '../../../functions/env.js';
import { readRunControlConfig } from '../../../functions/run-control/config.js';
import { createRunControlFunction } from '../../../functions/run-control/function.js';
import { readWriterConfig } from '../../../functions/writer/config.js';
import { createWriterFunction } from '../../../functions/writer/function.js';

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
