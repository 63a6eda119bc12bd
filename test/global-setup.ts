import type {} from 'vitest';
import type { TestProject } from 'vitest/node';
import { type LocalServices, startLocalServices } from '@sluice/devstack';

/**
 * The lanes that need the services (vitest.config.ts) each run this setup; they share one start per run: the
 * first setup starts the services, the last teardown stops them. The state lives on `globalThis` because each
 * project loads this module on its own.
 */
interface SharedServices {
  started: Promise<LocalServices>;
  users: number;
}
const SHARED = Symbol.for('sluice.test.localServices');
const shared = globalThis as { [SHARED]?: SharedServices };

/**
 * Vitest global setup: starts DynamoDB Local (in memory), s3rver and the local KMS on free loopback ports,
 * creates the tables, and sets the variables of docs/internals.md in `process.env` before the test workers
 * fork, so every worker inherits them. Also provides them as `inject('localEnv')`.
 * The returned teardown stops everything.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // The SDK's notice that it will require Node 22 in 2027, printed once per worker, is noise in test output.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  shared[SHARED] ??= { started: startLocalServices(), users: 0 };
  const state = shared[SHARED];
  state.users += 1;
  const services = await state.started;
  for (const [name, value] of Object.entries(services.env)) process.env[name] = value;
  // Never let a developer's AWS profile leak into the tests.
  delete process.env.AWS_PROFILE;
  delete process.env.AWS_SESSION_TOKEN;
  project.provide('localEnv', services.env);
  return async () => {
    state.users -= 1;
    if (state.users > 0) return;
    shared[SHARED] = undefined;
    await services.stop();
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** The environment of the local services, also set in `process.env`. */
    localEnv: Record<string, string>;
  }
}
