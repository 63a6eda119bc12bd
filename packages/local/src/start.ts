/**
 * `npm start`: the whole of Sluice on this machine.
 *
 * 1. start DynamoDB Local, s3rver and the local KMS on fixed loopback ports, data in `.sluice/data`
 *    (`--fresh` wipes it first), and create the tables;
 * 2. put their environment in `process.env` (the SDK's endpoints; the handlers are built from it);
 * 3. ensure the workspace `ws_local` and an owner key with every scope (kept in `.sluice/local.json`, reused
 *    on restart);
 * 4. build the web console (`@sluice/console`), start the API server (`http-adapter.ts`) serving it under
 *    `/console/`, and the export scheduler (`scheduler.ts`);
 * 5. write `.sluice/local.json` and `.sluice/runtime.json` and print how to use it;
 * 6. on SIGINT / SIGTERM stop everything it started.
 *
 * It prints one line per export run and one per API call; what the functions write (JSON logs, EMF metric
 * lines) goes to `.sluice/logs/sluice-<time>.log`, or to the terminal with `--verbose`.
 *
 * Environment: SLUICE_DATA_DIR (default `.sluice/data`), SLUICE_API_PORT (3000), SLUICE_S3_PORT (4569),
 * SLUICE_DYNAMODB_PORT (8000), SLUICE_KMS_PORT (4599).
 */
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { formatRequestLine, routeLocalOutput } from './local-output.js';
import { type LocalServices, startLocalServices, tickSecondsFromEnv } from '@sluice/devstack';
import {
  isProcessAlive,
  LOCAL_JSON,
  type LocalJson,
  RUNTIME_JSON,
  type RuntimeJson,
  readJsonFile,
  removeRuntimeJson,
  STATE_DIR,
  writeJsonFile,
} from './runtime-config.js';

/** The workspace `npm start` creates. */
export const LOCAL_WORKSPACE_ID = 'ws_local';

/** The ports `npm start` uses, from the environment with their defaults. */
export function localPorts(env: NodeJS.ProcessEnv = process.env) {
  return {
    api: portFrom(env, 'SLUICE_API_PORT', 3000),
    s3: portFrom(env, 'SLUICE_S3_PORT', 4569),
    dynamodb: portFrom(env, 'SLUICE_DYNAMODB_PORT', 8000),
    kms: portFrom(env, 'SLUICE_KMS_PORT', 4599),
  };
}

function portFrom(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new Error(`${name}=${raw} is not a port number`);
  return port;
}

/** Fails with a clear message when a port on 127.0.0.1 is taken. */
async function assertPortFree(port: number, variable: string): Promise<void> {
  await new Promise<void>((resolvePort, reject) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new Error(
          error.code === 'EADDRINUSE'
            ? `Port ${port} on 127.0.0.1 is in use: stop what holds it or set ${variable} to another port.`
            : `Cannot listen on 127.0.0.1:${port}: ${error.message}`,
        ),
      ),
    );
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolvePort()));
  });
}

/**
 * The first export, as `npm start` prints it: seed an hour of data first (subscribers included, so the first
 * run's snapshot has them), then create the export from before it, whose first run is queued at once.
 * `filesDir` is where the local bucket's files are on disk.
 */
export function firstExportSteps(
  local: LocalJson,
  nowMs: number,
  tickSeconds: number,
  filesDir: string,
): string[] {
  return [
    'A first export, with files of every dataset within a few minutes:',
    '',
    `1. Seed an hour of data (recorded from ${SEED_SINCE} ago to now) and 100 subscribers:`,
    '',
    `npm run sluice -- seed --workspace ${local.workspaceId} --events 5000 --subscribers 100 --since ${SEED_SINCE}`,
    '',
    '2. Create an export of all four datasets to the local bucket, from before that hour:',
    '',
    exportCurl(local, nowMs),
    '',
    `Its first run is queued at once and starts at the scheduler's next tick (every ${tickSeconds} s): it writes`,
    "every dataset up to a few minutes ago, and today's subscriber snapshot, under",
    `${filesDir}. Then it runs every 5 minutes.`,
  ];
}

/** How far back the walk-through's `seed` records its events (`--since 1h`), and the export's `startFrom`. */
export const SEED_SINCE = '1h';
const SEED_SINCE_MS = 3_600_000;

/**
 * The curl that creates an export to the local bucket (the key is in the header, as the user would type it).
 * `startFrom` is an hour before `nowMs` (`npm start`'s start), so a `seed --since 1h` run any time later is in it.
 */
export function exportCurl(local: LocalJson, nowMs: number): string {
  const body = {
    name: 'Local bucket',
    provider: 's3',
    bucket: local.s3.bucket,
    endpoint: local.s3.endpoint,
    region: local.s3.region,
    accessKeyId: local.s3.accessKeyId,
    secretAccessKey: local.s3.secretAccessKey,
    datasets: ['email_events', 'sms_events', 'custom_events', 'subscribers'],
    frequency: 'every_5_minutes',
    startFrom: new Date(Math.floor((nowMs - SEED_SINCE_MS) / 60_000) * 60_000).toISOString(),
  };
  return [
    `curl -sS -X POST ${local.apiUrl}/data-exports \\`,
    `  -H 'Authorization: Bearer ${local.apiKey}' \\`,
    `  -H 'Content-Type: application/json' \\`,
    `  -d '${JSON.stringify(body)}'`,
  ].join('\n');
}

interface Stoppable {
  name: string;
  stop(): Promise<void>;
}

async function main(): Promise<void> {
  // The SDK's notice about Node 22 would be the loudest line of the start-up output; the Lambdas run Node 22.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const { values } = parseArgs({
    options: {
      fresh: { type: 'boolean', default: false },
      verbose: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const dataDir = resolve(process.env.SLUICE_DATA_DIR ?? join(STATE_DIR, 'data'));
  const ports = localPorts();

  const running = readJsonFile<RuntimeJson>(RUNTIME_JSON);
  if (running && running.pid !== process.pid && isProcessAlive(running.pid)) {
    throw new Error(`npm start is already running (pid ${running.pid}); stop it first.`);
  }
  await assertPortFree(ports.api, 'SLUICE_API_PORT');
  await assertPortFree(ports.s3, 'SLUICE_S3_PORT');
  await assertPortFree(ports.dynamodb, 'SLUICE_DYNAMODB_PORT');
  await assertPortFree(ports.kms, 'SLUICE_KMS_PORT');

  if (values.fresh) {
    console.log(`--fresh: wiping ${dataDir}`);
    await rm(dataDir, { recursive: true, force: true });
    await rm(LOCAL_JSON, { force: true });
  }

  // From here on, console output and whatever the functions write go to the log file; `print` to the terminal.
  const output = routeLocalOutput({ verbose: values.verbose, logDir: join(STATE_DIR, 'logs') });
  const { print } = output;
  const started: Stoppable[] = [];
  let stopping: Promise<void> | undefined;
  const stopAll = (): Promise<void> => {
    stopping ??= (async () => {
      for (const part of [...started].reverse()) {
        try {
          await part.stop();
        } catch (error) {
          output.printError(`stopping ${part.name} failed: ${(error as Error).message}`);
        }
      }
      await removeRuntimeJson();
      await output.close();
    })();
    return stopping;
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      print(`\n${signal}: stopping`);
      void stopAll().then(() => process.exit(0));
    });
  }

  try {
    const t0 = Date.now();
    const services: LocalServices = await startLocalServices({
      dataDir,
      ports: { dynamodb: ports.dynamodb, s3: ports.s3, kms: ports.kms },
      // DynamoDB in memory, kept in a snapshot file: docs/local.md, "Local storage", says what a crash can lose.
      inMemory: false,
      // The snapshots written while running go to the log file; the rest (restored, failed) to the terminal.
      log: (line) => (line.startsWith('DynamoDB: snapshot written') ? console.log(line) : print(`  ${line}`)),
    });
    started.push({ name: 'local services', stop: () => services.stop() });
    for (const [name, value] of Object.entries(services.env)) process.env[name] = value;

    // The SDK reads its endpoints (AWS_ENDPOINT_URL_*) from process.env; the stores take their tables here.
    const { ControlStore } = await import('@sluice/control');
    const store = new ControlStore({ tableName: services.env.SLUICE_CONTROL_TABLE });
    await store.ensureWorkspace(LOCAL_WORKSPACE_ID, 'Local workspace');
    const previous = readJsonFile<LocalJson>(LOCAL_JSON);
    let apiKey = previous?.workspaceId === LOCAL_WORKSPACE_ID ? previous.apiKey : undefined;
    if (apiKey && !(await store.findApiKey(apiKey))) apiKey = undefined;
    if (!apiKey) ({ apiKey } = await store.createApiKey({ workspaceId: LOCAL_WORKSPACE_ID, role: 'owner' }));

    const apiUrl = `http://127.0.0.1:${ports.api}/v1`;
    const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
    if (existsSync(here('./http-adapter.ts')) || existsSync(here('./http-adapter.js'))) {
      const { startApiServer } = await import('./http-adapter.js');
      // The web console, built on each start (well under a second) and served beside the API.
      const { buildConsole, serveConsole } = await import('@sluice/console');
      const { outDir: consoleDir } = buildConsole();
      const api = await startApiServer({
        host: '127.0.0.1',
        port: ports.api,
        onRequest: (call) => print(formatRequestLine(call)),
        site: (req, res) => serveConsole(consoleDir, req, res),
      });
      started.push({ name: 'API server', stop: () => api.close() });
    } else {
      print('  (no packages/local/src/http-adapter.ts yet: the API server is not started)');
    }
    const [{ startScheduler }, { localArchiveFunction, localWorkflows }] = await Promise.all([
      import('@sluice/devstack'),
      import('./local-functions.js'),
    ]);
    const compact = localArchiveFunction();
    const scheduler = startScheduler({
      log: print,
      // One line per run on the terminal; the runner's task errors ([sfn]) beside the functions' logs.
      workflows: () => localWorkflows({ log: (line) => console.log(`[sfn] ${line}`) }),
      archive: { run: () => compact({}), intervalMs: 15 * 60_000 },
    });
    started.push({ name: 'scheduler', stop: () => scheduler.stop() });
    // Producers' bus events (PutEvents to AWS_ENDPOINT_URL_EVENTBRIDGE): the ingest rule puts them on the local
    // buffer; its event source mapping invokes the ingest function as in AWS (a minute's window in AWS, 2 s here).
    // A bus event given up after its attempts is printed and kept in memory (there is no local SQS to redrive).
    const { localIngestFunction } = await import('./local-functions.js');
    const { MemoryDeadLetterQueue, startStreamMapping } = await import('@sluice/devstack');
    const ingestDeadLetters = new MemoryDeadLetterQueue();
    const ingest = localIngestFunction({
      send: async (body) => {
        print(`  ingest: a bus event could not be written, kept as a dead letter: ${body.slice(0, 200)}`);
        await ingestDeadLetters.send(body);
      },
    });
    const mapping = startStreamMapping(
      services.ingestBuffer,
      async (event) => (await ingest(event as never)) as { batchItemFailures?: { itemIdentifier: string }[] },
      {
        batchSize: 5_000,
        batchingWindowMs: 2_000,
        maxRetryAttempts: 2,
        onFailure: async (record) =>
          print(`  ingest: a buffer batch was discarded: ${JSON.stringify(record.KinesisBatchInfo)}`),
      },
    );
    started.push({ name: 'ingest buffer', stop: () => mapping.stop() });

    const local: LocalJson = {
      apiUrl,
      apiKey,
      workspaceId: LOCAL_WORKSPACE_ID,
      s3: {
        endpoint: services.s3.endpoint,
        region: services.s3.region,
        bucket: services.s3.bucket,
        accessKeyId: services.s3.accessKeyId,
        secretAccessKey: services.s3.secretAccessKey,
      },
    };
    await writeJsonFile(LOCAL_JSON, local);
    const runtime: RuntimeJson = {
      pid: process.pid,
      startedAt: new Date().toISOString(),
      dataDir,
      env: { ...services.env, SLUICE_API_URL: apiUrl },
    };
    await writeJsonFile(RUNTIME_JSON, runtime);

    print(
      [
        '',
        `Sluice is running (ready in ${Date.now() - t0} ms, data in ${dataDir})`,
        '',
        `  API          ${apiUrl}`,
        `  Console      http://127.0.0.1:${ports.api}/console/   (sign in with the API key below)`,
        `  API key      ${apiKey}   (workspace ${LOCAL_WORKSPACE_ID}, owner, all scopes)`,
        `  Local bucket ${local.s3.bucket} at ${local.s3.endpoint}`,
        `               region ${local.s3.region}, access key ${local.s3.accessKeyId}, secret ${local.s3.secretAccessKey}`,
        `  DynamoDB     ${services.dynamodb.endpoint}   KMS ${services.kms.endpoint}`,
        output.logFile
          ? `  Logs         ${output.logFile}   (the functions' logs and metrics; --verbose shows them here)`
          : '  Logs         here (--verbose)',
        '',
        ...firstExportSteps(local, t0, tickSecondsFromEnv(), join(dataDir, 's3', local.s3.bucket)),
        '',
        `Saved in ${LOCAL_JSON}. CLI: npm run sluice -- help. Ctrl-C stops everything.`,
      ].join('\n'),
    );
  } catch (error) {
    await stopAll();
    throw error;
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((error: unknown) => {
    console.error(`npm start failed: ${(error as Error).message ?? String(error)}`);
    process.exit(1);
  });
}
