import { configDefaults, defineConfig } from 'vitest/config';

/**
 * The test lanes (vitest projects; `npm run test:<lane>`, `npm test` runs them all):
 * - unit: pure tests, listed here by file: nothing started, no Java, s3rver, KMS, Chromium or network.
 *   A test belongs here when it (and what it imports) needs none of the local services: no `test/helpers/tables`,
 *   no `@sluice/devstack` services, no table or bucket variables. A new test file not listed lands in
 *   `integration`, which has the services, so it always runs somewhere.
 * - integration: every other test beside the code, and the rest of `test/`: `test/infra/` (synthesized
 *   templates), `test/sim/`, the CLI and MCP surfaces.
 * - contract: `test/contract/`, the API against its OpenAPI document.
 * - e2e: `test/e2e/`, through the synthesized state machines.
 * - browser: `test/surfaces/console.test.ts`, the web console in Chromium.
 * The lanes but unit share the global setup (`test/global-setup.ts`), which starts the services once per run.
 */
const UNIT = [
  'functions/api/config.test.ts',
  'functions/authorizer/authorize.test.ts',
  'functions/lambda.test.ts',
  'functions/writer/config.test.ts',
  'functions/writer/function.test.ts',
  'packages/api/src/backfill-validation.test.ts',
  'packages/api/src/errors.test.ts',
  'packages/api/src/http-logging.test.ts',
  'packages/api/src/http.test.ts',
  'packages/api/src/openapi/document.test.ts',
  'packages/api/src/validation.test.ts',
  'packages/cli/src/connection.test.ts',
  'packages/cli/src/program.test.ts',
  'packages/cli/src/operator/progress.test.ts',
  'packages/console/src/backfills.test.ts',
  'packages/console/src/history.test.ts',
  'packages/console/src/site.test.ts',
  'packages/control/src/client.test.ts',
  'packages/core/src/**/*.test.ts',
  'packages/engine/src/available-from.test.ts',
  'packages/engine/src/backfill.test.ts',
  'packages/engine/src/deps.test.ts',
  'packages/engine/src/errors.test.ts',
  'packages/engine/src/metrics.test.ts',
  'packages/engine/src/plan.test.ts',
  'packages/eventlog/src/batch.test.ts',
  'packages/eventlog/src/client.test.ts',
  'packages/eventlog/src/generate.test.ts',
  'packages/eventlog/src/metrics.test.ts',
  'packages/eventlog/src/producer.test.ts',
  'packages/local/src/local-output.test.ts',
  'packages/local/src/runtime-config.test.ts',
  'packages/devstack/src/scheduler.test.ts',
  'packages/sinks/src/client.test.ts',
  'packages/sinks/src/encoder.test.ts',
  'packages/sinks/src/endpoint.test.ts',
  'packages/sinks/src/lifecycle.test.ts',
  'packages/sinks/src/lookup.test.ts',
  'packages/sinks/src/parquet-encoder.test.ts',
  'scripts/**/*.test.ts',
];

const CONTRACT = ['test/contract/**/*.test.ts'];
const E2E = ['test/e2e/**/*.test.ts'];
const BROWSER = ['test/surfaces/console.test.ts'];

const GLOBAL_SETUP = ['test/global-setup.ts'];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // The SDK's notice that it will require Node 22 in 2027, printed once per worker, is noise in test output.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    projects: [
      { extends: true, test: { name: 'unit', include: UNIT } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: [
            'packages/*/src/**/*.test.ts',
            'functions/**/*.test.ts',
            'infra/**/*.test.ts',
            'test/**/*.test.ts',
            'scripts/**/*.test.ts',
          ],
          exclude: [...configDefaults.exclude, ...UNIT, ...CONTRACT, ...E2E, ...BROWSER],
          globalSetup: GLOBAL_SETUP,
        },
      },
      { extends: true, test: { name: 'contract', include: CONTRACT, globalSetup: GLOBAL_SETUP } },
      { extends: true, test: { name: 'e2e', include: E2E, globalSetup: GLOBAL_SETUP } },
      { extends: true, test: { name: 'browser', include: BROWSER, globalSetup: GLOBAL_SETUP } },
    ],
  },
});
