/**
 * One schedule's world: a fresh control table, the real API over HTTP, the real workflow handlers run by the
 * synthesized ExportRun and Dispatch definitions (`LocalWorkflows`), the archive function, and ingest, all on
 * the local services (DynamoDB Local, s3rver, the local KMS) the tests use, under the virtual clock.
 * Faults go through the hooks the fault suites use: a Task interceptor, and the writer's bucket writer.
 */
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { CONTROL_TABLE, EVENTS_TABLE, SUBSCRIBERS_TABLE, type TableSpec } from '@sluice/core';
import type { OrganizationStore } from '@sluice/control';
import type { BucketWriterFactory } from '@sluice/engine';
import type { EventLogWriter } from '@sluice/eventlog';
import { ApiClient, recordedResponses } from '../helpers/api-client.js';
import { BucketView } from './bucket.js';
import { unseededRandomBytes } from './random.js';

type Json = Record<string, unknown>;

/** The faults the next tick injects (each applies to the one Dispatch tick it is set for). */
export interface TickFaults {
  /** The run's budget is spent at once: every writer stops after its first file (a partial run). */
  budgetSpent?: boolean;
  /** The writer's process dies right after its first upload of the tick, before saving its progress. */
  crashAfterUpload?: boolean;
  /** The bucket refuses the writer's uploads (a transient 503 on every put) for the whole tick. */
  bucketDown?: boolean;
}

/** The hot log's retention in the simulation: short, so the clock crosses it. */
export const SIM_RETENTION_DAYS = 3;
const DAY_MS = 86_400_000;

export interface World {
  runId: string;
  env: Record<string, string>;
  workspaces: { id: string; client: ApiClient; ingest: EventLogWriter; imports: EventLogWriter }[];
  bucket: BucketView;
  archive: BucketView;
  s3Endpoint: string;
  faults: TickFaults;
  /**
   * Key prefixes whose credentials the customer revoked: every upload under one is refused (`AccessDenied`, a
   * destination failure) until the export's credentials are replaced.
   */
  revoked: Set<string>;
  retentionMs: number;
  /** The operator's `sluice orgs link|unlink` store (issue 27), on the world's control table. */
  organizations: Pick<OrganizationStore, 'link' | 'unlink'>;
  /** One Dispatch execution and every ExportRun it started. */
  dispatch(): Promise<{ started: number; failed: number }>;
  compact(): Promise<void>;
  /** `sluice erase` of a person in a workspace: the hot log, the archive, the rejected events. */
  erase(workspace: number, target: { subscriberId: string } | { email: string }): Promise<unknown>;
  close(): Promise<void>;
}

let simS3: Promise<import('@sluice/devstack').S3Local> | undefined;

/**
 * The simulation's own s3rver (once per process), in this process and accepting any request time: its clients
 * sign with the virtual clock. Everything else is the local services of `process.env`.
 */
function simBucketServer() {
  simS3 ??= (async () => {
    const [{ startS3Local }, { mkdtemp }, { tmpdir }, { join }] = await Promise.all([
      import('@sluice/devstack'),
      import('node:fs/promises'),
      import('node:os'),
      import('node:path'),
    ]);
    return startS3Local({
      directory: await mkdtemp(join(tmpdir(), 'sluice-sim-s3-')),
      ignoreClockSkew: true,
    });
  })();
  return simS3;
}

/** Stops the simulation's s3rver. */
export async function stopSimBucketServer(): Promise<void> {
  const running = simS3;
  simS3 = undefined;
  await (await running)?.stop();
}

/** Builds a world with `workspaceCount` workspaces (process.env must hold the local services' variables). */
export async function createWorld(workspaceCount: number): Promise<World> {
  const runId = unseededRandomBytes(5).toString('hex');
  const controlTable = `sluice-control-sim-${runId}`;
  const tableNames = [controlTable, `sluice-events-sim-${runId}`, `sluice-subscribers-sim-${runId}`];
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    SLUICE_LOCAL_S3_ENDPOINT: (await simBucketServer()).endpoint,
    SLUICE_CONTROL_TABLE: controlTable,
    SLUICE_EVENTS_TABLE: tableNames[1]!,
    SLUICE_SUBSCRIBERS_TABLE: tableNames[2]!,
    SLUICE_EVENT_RETENTION_DAYS: String(SIM_RETENTION_DAYS),
  };
  const [
    local,
    tables,
    control,
    eventlog,
    engine,
    stepfunctions,
    template,
    writerFn,
    writerConfig,
    http,
    s3local,
  ] = await Promise.all([
    import('@sluice/local'),
    import('@sluice/devstack'),
    import('@sluice/control'),
    import('@sluice/eventlog'),
    import('@sluice/engine'),
    import('@sluice/devstack'),
    import('@sluice/local'),
    import('../../functions/writer/function.js'),
    import('../../functions/writer/config.js'),
    import('@sluice/local'),
    import('@sluice/devstack'),
  ]);
  const dynamo = tables.localDynamoDbClient(env.AWS_ENDPOINT_URL_DYNAMODB!);
  await tables.createLocalTables(
    dynamo,
    [CONTROL_TABLE, EVENTS_TABLE, SUBSCRIBERS_TABLE].map((spec, i) => ({
      name: tableNames[i]!,
      spec: withoutTtl(spec),
    })),
  );

  const server = await http.startApiServer({
    host: '127.0.0.1',
    port: 0,
    handlers: local.localApiFunctions(env) as never,
  });
  const store = new control.ControlStore({ tableName: controlTable });
  const retentionMs = SIM_RETENTION_DAYS * DAY_MS;
  const eventTables = {
    eventsTable: env.SLUICE_EVENTS_TABLE!,
    subscribersTable: env.SLUICE_SUBSCRIBERS_TABLE!,
  };
  const quiet = { refusedBehindExport: () => undefined };
  const workspaces: World['workspaces'] = [];
  for (let i = 0; i < workspaceCount; i++) {
    const id = `ws_sim${runId}${i}`;
    await store.ensureWorkspace(id);
    const { apiKey } = await store.createApiKey({ workspaceId: id, role: 'owner' });
    workspaces.push({
      id,
      client: new ApiClient(server.url, apiKey),
      // The bus: producers do not own recorded time.
      ingest: new eventlog.EventLogWriter({
        ...eventTables,
        explicitRecordedAt: 'ignore',
        retentionSeconds: retentionMs / 1000,
        metrics: quiet,
      }),
      // The operator's import (`sluice events import`): explicit recorded time, refused at or behind an export.
      imports: new eventlog.EventLogWriter({
        ...eventTables,
        explicitRecordedAt: {
          refuseAtOrBehind: new control.ControlExportPositions({ tableName: controlTable }),
        },
        // An hour imported into after it ended is archived again by the next compaction.
        lateHours: new control.ArchiveCursorStore({ tableName: controlTable }),
        retentionSeconds: retentionMs / 1000,
        metrics: quiet,
      }),
    });
  }

  const faults: TickFaults = {};
  const revoked = new Set<string>();
  const allowed = local.localAllowedEndpoints(env);
  const realBuckets = engine.createBucketWriterFactory({ allowedEndpoints: allowed, assumeRoles: false });
  let uploadsThisTick = 0;
  const faultyBuckets: BucketWriterFactory = (location, credentials) => {
    const real = realBuckets(location, credentials);
    return {
      ...real,
      async writeFile(key, lines, options) {
        if ([...revoked].some((prefix) => key.startsWith(prefix))) {
          const error = new Error('Access Denied');
          error.name = 'AccessDenied';
          throw Object.assign(error, { $metadata: { httpStatusCode: 403 } });
        }
        if (faults.bucketDown) {
          const error = new Error('Please reduce your request rate.');
          error.name = 'SlowDown';
          throw Object.assign(error, { $metadata: { httpStatusCode: 503 }, $retryable: {} });
        }
        const file = await real.writeFile(key, lines, options);
        uploadsThisTick += 1;
        if (faults.crashAfterUpload && uploadsThisTick === 1) {
          const error = new Error('The worker process exited before it returned.');
          error.name = 'Lambda.Unknown';
          throw error;
        }
        return file;
      },
    };
  };
  const functions = local.localWorkflowFunctions(env);
  const writer = writerFn.createWriterFunction(writerConfig.readWriterConfig(env), {
    allowedEndpoints: allowed,
    assumeRoles: false,
    localS3Endpoint: env.SLUICE_LOCAL_S3_ENDPOINT!,
    overrides: { bucketWriterFactory: faultyBuckets },
  });
  const definitions = await template.loadWorkflowDefinitions();
  const workflows = await stepfunctions.LocalWorkflows.create({
    definitions,
    functions: {
      runControl: functions.runControl as never,
      dispatch: functions.dispatch as never,
      writer: writer as never,
    },
    retryIntervalOverrides: Object.fromEntries(
      ['ClaimAndPlan', 'WriteWindow', 'Commit', 'RecordFailure', 'FindDueDestinations'].map((s) => [s, 0]),
    ),
    intercept: async (state, payload, invoke) => {
      const output = await invoke(payload);
      const run = (output as Json | null)?.run as Json | undefined;
      if (faults.budgetSpent && state === 'ClaimAndPlan' && run !== undefined) run.deadlineMs = Date.now();
      return output;
    },
  });
  const archiveFunction = local.localArchiveFunction(env);
  const [archiveModule, { DynamoDBClient }] = await Promise.all([
    import('@sluice/archive'),
    import('@aws-sdk/client-dynamodb'),
  ]);
  const eraserClient = new DynamoDBClient({ endpoint: env.AWS_ENDPOINT_URL_DYNAMODB! });
  const eraserS3 = archiveModule.createArchiveClient({ localEndpoint: env.SLUICE_LOCAL_S3_ENDPOINT! });
  const eraser = new archiveModule.Eraser({
    client: eraserClient,
    ...eventTables,
    archive: new archiveModule.ArchiveBucket({ bucket: env.SLUICE_ARCHIVE_BUCKET!, client: eraserS3 }),
    erasureLog: new control.ErasureLogStore({ tableName: controlTable }),
    rejected: new eventlog.DynamoRejectedEvents({ tableName: controlTable, client: eraserClient }),
    hotRetentionMs: retentionMs,
  });

  const s3 = new S3Client({
    endpoint: env.SLUICE_LOCAL_S3_ENDPOINT!,
    region: s3local.LOCAL_REGION,
    forcePathStyle: true,
    credentials: s3local.LOCAL_S3_CREDENTIALS,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });

  return {
    runId,
    env,
    workspaces,
    bucket: new BucketView(s3, s3local.LOCAL_BUCKET),
    archive: new BucketView(s3, s3local.LOCAL_ARCHIVE_BUCKET),
    s3Endpoint: env.SLUICE_LOCAL_S3_ENDPOINT!,
    faults,
    revoked,
    retentionMs,
    organizations: new control.OrganizationStore({ tableName: controlTable }),
    async dispatch() {
      uploadsThisTick = 0;
      const outcome = await workflows.runDispatch();
      return {
        started: outcome.started,
        failed: outcome.runs.filter((run) => run.status === 'failed').length,
      };
    },
    async compact() {
      await (archiveFunction as unknown as (event: unknown, context: unknown) => Promise<unknown>)(
        {},
        undefined,
      );
    },
    async erase(workspace, target) {
      return eraser.erase(
        workspaces[workspace]!.id,
        'email' in target
          ? { kind: 'email', email: target.email }
          : { kind: 'subscriber', subscriberId: target.subscriberId },
      );
    },
    async close() {
      await workflows.idle();
      eraserClient.destroy();
      eraserS3.destroy();
      await server.close();
      s3.destroy();
      recordedResponses.length = 0;
      await Promise.all(
        tableNames.map((TableName) =>
          dynamo.send(new DeleteTableCommand({ TableName })).catch(() => undefined),
        ),
      );
      dynamo.destroy();
    },
  };
}

/**
 * A table of the simulation's world, without TTL. DynamoDB Local's TTL sweeper deletes items whose `expiresAt`
 * has passed by the real clock, and the virtual clock is months behind it: with TTL on, the sweeper deleted
 * hot-log rows and window progress that the engine (under the virtual clock) still counts as present, at
 * random moments (seed 7011: a backfill rewrote a delivered day with the rows the sweeper had just removed;
 * `caught-up` misses of a few rows). Without TTL nothing is deleted physically; every reader already treats
 * an item whose `expiresAt` has passed (by the virtual clock) as absent, as it must on DynamoDB, whose TTL
 * deletes lazily.
 */
function withoutTtl(spec: TableSpec): TableSpec {
  const { ttlAttribute: _ttl, ...rest } = spec;
  return rest;
}
