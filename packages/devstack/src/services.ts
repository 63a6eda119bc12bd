import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EVENTS_DETAIL_TYPE, SUBSCRIBERS_DETAIL_TYPE, WORKSPACE_SOURCE_PREFIX } from '@sluice/eventlog';
import { type BusLocal, startBusLocal } from './bus-local.js';
import { LocalStream } from './stream-local.js';
import { type DynamoDbLocal, startDynamoDbLocal } from './dynamodb-local.js';
import { type KmsLocal, LOCAL_ACCOUNT_ID, startKmsLocal } from './kms-local.js';
import { createLocalTables, LOCAL_TABLE_NAMES, localDynamoDbClient } from './local-tables.js';
import { LOCAL_ARCHIVE_BUCKET, type S3Local, startS3Local } from './s3-local.js';

/** Options of {@link startLocalServices}. */
export interface LocalServicesOptions {
  /**
   * Folder for the persistent state: `dynamodb/`, `s3/`, `kms-keys.json`, `bus-events.jsonl` (what the
   * engine put on the bus). When absent a temporary folder is
   * used (removed on stop) and DynamoDB and KMS keep everything in memory.
   */
  dataDir?: string;
  /** Ports on 127.0.0.1; 0 or absent picks a free one. */
  ports?: { dynamodb?: number; s3?: number; kms?: number; bus?: number };
  /**
   * Keep DynamoDB only in memory even with a `dataDir`. Otherwise, with a `dataDir`, DynamoDB Local runs in
   * memory and keeps its tables in `dynamodb/shared-local-instance.db` there (see `snapshotFile` of
   * `startDynamoDbLocal`).
   * @default true without a dataDir, false with one
   */
  inMemory?: boolean;
  /**
   * Start DynamoDB Local's JVM for a short life (see `quickStart` of `startDynamoDbLocal`).
   * @default true when only in memory, false with a snapshot file
   */
  dynamodbQuickStart?: boolean;
  /** Receives one line per step with its duration. */
  log?: (line: string) => void;
}

/** The file, under `<dataDir>/dynamodb/`, that keeps the local tables (the name DynamoDB Local gives its own file). */
export const DYNAMODB_SNAPSHOT_FILE = 'shared-local-instance.db';

/** The per-key rate limit of the local API (the deployed default is far lower: `apiKeyRateLimit`). */
export const LOCAL_API_KEY_RATE_LIMIT = { ratePerSecond: 1000, burst: 1000 } as const;

/** The environment of docs/internals.md for code running against the local services. */
export interface LocalServicesEnv {
  SLUICE_CONTROL_TABLE: string;
  SLUICE_EVENTS_TABLE: string;
  SLUICE_SUBSCRIBERS_TABLE: string;
  SLUICE_KMS_KEY_ID: string;
  SLUICE_LOCAL_S3_ENDPOINT: string;
  /** The event archive bucket, a second bucket of the local s3rver. */
  SLUICE_ARCHIVE_BUCKET: string;
  /** The stage the engine's metrics are published under: `local`. */
  SLUICE_STAGE: string;
  /** The API's per-key limit, requests a second and burst: high locally, so suites and benches never meet it. */
  SLUICE_API_KEY_RATE_LIMIT: string;
  SLUICE_API_KEY_BURST_LIMIT: string;
  /** The API's own account (refused as a roleArn's): the local stand-ins' account. */
  SLUICE_ACCOUNT_ID: string;
  AWS_ENDPOINT_URL_DYNAMODB: string;
  AWS_ENDPOINT_URL_KMS: string;
  /** The bus the engine publishes destination notices on (the local bus stand-in). */
  SLUICE_EVENT_BUS_NAME: string;
  AWS_ENDPOINT_URL_EVENTBRIDGE: string;
  AWS_REGION: string;
  AWS_ACCESS_KEY_ID: string;
  AWS_SECRET_ACCESS_KEY: string;
  /** The `service` of every log line: the stack gives each function its own; the local runtime runs them all in one process. */
  POWERTOOLS_SERVICE_NAME: string;
  [name: string]: string;
}

/** The running local services. */
export interface LocalServices {
  dynamodb: DynamoDbLocal;
  s3: S3Local;
  kms: KmsLocal;
  /** The event bus stand-in: records what the engine puts on the bus; its ingest rule feeds `ingestBuffer`. */
  bus: BusLocal;
  /** The ingest buffer: producers' bus events, for an event source mapping ({@link startStreamMapping}). */
  ingestBuffer: LocalStream;
  /** The variables to put in `process.env` (or a child's environment). */
  env: LocalServicesEnv;
  /** Stops all four (and removes the temporary folder, if one was made). Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * Starts DynamoDB Local, s3rver, the local KMS and the local bus on 127.0.0.1 (in parallel), creates the tables of
 * `@sluice/core`, and returns their endpoints and the environment that points the SDK at them.
 * If one service fails to start, the others are stopped before the error is rethrown.
 */
export async function startLocalServices(options: LocalServicesOptions = {}): Promise<LocalServices> {
  const log = options.log ?? (() => {});
  const temporary = options.dataDir ? undefined : await mkdtemp(join(tmpdir(), 'sluice-local-'));
  const dataDir = options.dataDir ?? (temporary as string);
  const inMemory = options.inMemory ?? !options.dataDir;
  const started = Date.now();
  const timed = async <T>(name: string, start: () => Promise<T>): Promise<T> => {
    const t0 = Date.now();
    const value = await start();
    log(`${name} ready in ${Date.now() - t0} ms`);
    return value;
  };

  const ingestBuffer = new LocalStream();
  const results = await Promise.allSettled([
    timed('DynamoDB Local', () =>
      startDynamoDbLocal({
        port: options.ports?.dynamodb ?? 0,
        ...(inMemory ? {} : { snapshotFile: join(dataDir, 'dynamodb', DYNAMODB_SNAPSHOT_FILE), log }),
        ...(options.dynamodbQuickStart !== undefined ? { quickStart: options.dynamodbQuickStart } : {}),
      }),
    ),
    timed('s3rver', () => startS3Local({ directory: join(dataDir, 's3'), port: options.ports?.s3 ?? 0 })),
    timed('local KMS', () =>
      startKmsLocal({
        port: options.ports?.kms ?? 0,
        ...(inMemory && !options.dataDir ? {} : { keyFile: join(dataDir, 'kms-keys.json') }),
      }),
    ),
    timed('local bus', () =>
      startBusLocal({
        port: options.ports?.bus ?? 0,
        // The ingest rule of the stateless stack: a workspace's events and subscribers into the buffer.
        rules: [
          {
            sourcePrefix: WORKSPACE_SOURCE_PREFIX,
            detailTypes: [EVENTS_DETAIL_TYPE, SUBSCRIBERS_DETAIL_TYPE],
            target: ingestBuffer,
          },
        ],
        ...(options.dataDir ? { file: join(dataDir, 'bus-events.jsonl') } : {}),
      }),
    ),
  ]);
  const running = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const stopAll = async () => {
    await Promise.allSettled(running.map((service) => service.stop()));
    if (temporary) await rm(temporary, { recursive: true, force: true });
  };
  const failed = results.find((result) => result.status === 'rejected');
  if (failed) {
    await stopAll();
    throw failed.reason;
  }
  const [dynamodb, s3, kms, bus] = running as [DynamoDbLocal, S3Local, KmsLocal, BusLocal];

  try {
    const client = localDynamoDbClient(dynamodb.endpoint);
    await timed('tables', () => createLocalTables(client));
    client.destroy();
  } catch (error) {
    await stopAll();
    throw error;
  }
  log(`local services ready in ${Date.now() - started} ms`);

  let stopping: Promise<void> | undefined;
  return {
    dynamodb,
    s3,
    kms,
    bus,
    ingestBuffer,
    env: {
      SLUICE_CONTROL_TABLE: LOCAL_TABLE_NAMES.control,
      SLUICE_EVENTS_TABLE: LOCAL_TABLE_NAMES.events,
      SLUICE_SUBSCRIBERS_TABLE: LOCAL_TABLE_NAMES.subscribers,
      SLUICE_KMS_KEY_ID: kms.keyArn,
      SLUICE_LOCAL_S3_ENDPOINT: s3.endpoint,
      SLUICE_ARCHIVE_BUCKET: LOCAL_ARCHIVE_BUCKET,
      SLUICE_STAGE: 'local',
      SLUICE_API_KEY_RATE_LIMIT: String(LOCAL_API_KEY_RATE_LIMIT.ratePerSecond),
      SLUICE_API_KEY_BURST_LIMIT: String(LOCAL_API_KEY_RATE_LIMIT.burst),
      SLUICE_ACCOUNT_ID: LOCAL_ACCOUNT_ID,
      AWS_ENDPOINT_URL_DYNAMODB: dynamodb.endpoint,
      AWS_ENDPOINT_URL_KMS: kms.endpoint,
      SLUICE_EVENT_BUS_NAME: 'sluice-local',
      AWS_ENDPOINT_URL_EVENTBRIDGE: bus.endpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      POWERTOOLS_SERVICE_NAME: 'sluice-local',
    },
    stop() {
      stopping ??= stopAll();
      return stopping;
    },
  };
}
