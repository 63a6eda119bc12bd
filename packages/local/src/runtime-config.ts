import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { REPO_ROOT } from '@sluice/devstack';
import { readEnv, requiredVariable } from '@sluice/functions/env';

/** The state folder of `npm start`: `.sluice/` under the repository root. */
export const STATE_DIR = join(REPO_ROOT, '.sluice');
/** What a user of `npm start` needs: API URL, key, local bucket. */
export const LOCAL_JSON = join(STATE_DIR, 'local.json');
/** The internal environment of a running `npm start`, for the CLI. */
export const RUNTIME_JSON = join(STATE_DIR, 'runtime.json');

/** `.sluice/local.json`, exactly as documented in docs/local.md. */
export interface LocalJson {
  apiUrl: string;
  apiKey: string;
  workspaceId: string;
  s3: { endpoint: string; region: string; bucket: string; accessKeyId: string; secretAccessKey: string };
}

/** `.sluice/runtime.json`: the environment (endpoints, table names) of a running `npm start`. */
export interface RuntimeJson {
  /** The `npm start` process; the file is stale once it is gone. */
  pid: number;
  startedAt: string;
  dataDir: string;
  env: Record<string, string>;
}

/** Writes a JSON file atomically (temp file, then rename), readable by its owner only. */
export async function writeJsonFile(file: string, value: unknown): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const temp = `${file}.${process.pid}.tmp`;
  await writeFile(temp, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
  await rename(temp, file);
}

/** Reads a JSON file, or undefined when it is missing or not JSON. */
export function readJsonFile<T>(file: string): T | undefined {
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

/** True when a process with that id exists. */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes `.sluice/runtime.json` if it still belongs to this process. */
export async function removeRuntimeJson(file = RUNTIME_JSON): Promise<void> {
  const current = readJsonFile<RuntimeJson>(file);
  if (current?.pid === process.pid) await rm(file, { force: true });
}

/** Where the CLI's configuration came from. */
export type RuntimeSource = 'environment' | 'npm start';

/** The DynamoDB client settings of the configuration (the SDK's own `endpoint`, `region`, `credentials`). */
export interface DynamoDbSettings {
  endpoint?: string;
  region?: string;
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

/** The Sluice the CLI operates on: validated, read once, never written into `process.env`. */
export interface RuntimeConfig {
  source: RuntimeSource;
  tables: CliTables;
  /** `SLUICE_ARCHIVE_BUCKET`. */
  archiveBucket?: string;
  /** `SLUICE_EVENT_RETENTION_DAYS` as given (`erase` reads it). */
  eventRetentionDays?: string;
  /** `SLUICE_LOCAL_S3_ENDPOINT`: npm start's s3rver. */
  localS3Endpoint?: string;
  /** `SLUICE_INGEST_DLQ_URL`. */
  ingestDeadLetterQueueUrl?: string;
  /**
   * npm start's DynamoDB Local (`AWS_ENDPOINT_URL_DYNAMODB`, `AWS_REGION`, its credentials); empty for a deployed
   * stack, whose clients read the SDK's own environment as usual.
   */
  dynamodb: DynamoDbSettings;
}

const optionalVariable = z.string().optional();
/** The variables the CLI reads, validated by the functions' own `readEnv`. */
const cliVariables = z.object({
  SLUICE_CONTROL_TABLE: requiredVariable,
  SLUICE_EVENTS_TABLE: requiredVariable,
  SLUICE_SUBSCRIBERS_TABLE: requiredVariable,
  SLUICE_ARCHIVE_BUCKET: optionalVariable,
  SLUICE_EVENT_RETENTION_DAYS: optionalVariable,
  SLUICE_LOCAL_S3_ENDPOINT: optionalVariable,
  SLUICE_INGEST_DLQ_URL: optionalVariable,
  AWS_ENDPOINT_URL_DYNAMODB: optionalVariable,
  AWS_REGION: optionalVariable,
  AWS_ACCESS_KEY_ID: optionalVariable,
  AWS_SECRET_ACCESS_KEY: optionalVariable,
});

/**
 * The Sluice to operate on, for the CLI:
 * - `SLUICE_CONTROL_TABLE` set in `env`: the environment describes a deployed stack; its variables;
 * - else a `.sluice/runtime.json` of a running `npm start`: its variables, with its DynamoDB Local's settings;
 * - else throw an error that says what to do.
 * @throws Error naming each variable that is missing (`SLUICE_CONTROL_TABLE is not set`)
 */
export function loadRuntimeConfig(
  env: Readonly<Record<string, string | undefined>> = process.env,
  file: string = RUNTIME_JSON,
): RuntimeConfig {
  if (env.SLUICE_CONTROL_TABLE) return runtimeConfig('environment', env);
  const runtime = readJsonFile<RuntimeJson>(file);
  if (!runtime || typeof runtime.env !== 'object' || runtime.env === null) {
    throw new Error(
      'No Sluice to talk to: run `npm start` in another terminal, or set SLUICE_CONTROL_TABLE (and the other ' +
        'SLUICE_* variables of docs/internals.md) for a deployed stack.',
    );
  }
  if (!isProcessAlive(runtime.pid)) {
    throw new Error(
      `${file} belongs to an \`npm start\` (pid ${runtime.pid}) that is no longer running: start it again.`,
    );
  }
  return runtimeConfig('npm start', runtime.env);
}

function runtimeConfig(
  source: RuntimeSource,
  env: Readonly<Record<string, string | undefined>>,
): RuntimeConfig {
  const vars = readEnv(cliVariables, env);
  const { AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey } = vars;
  return {
    source,
    tables: {
      control: { tableName: vars.SLUICE_CONTROL_TABLE },
      events: { eventsTable: vars.SLUICE_EVENTS_TABLE, subscribersTable: vars.SLUICE_SUBSCRIBERS_TABLE },
    },
    ...(vars.SLUICE_ARCHIVE_BUCKET ? { archiveBucket: vars.SLUICE_ARCHIVE_BUCKET } : {}),
    ...(vars.SLUICE_EVENT_RETENTION_DAYS ? { eventRetentionDays: vars.SLUICE_EVENT_RETENTION_DAYS } : {}),
    ...(vars.SLUICE_LOCAL_S3_ENDPOINT ? { localS3Endpoint: vars.SLUICE_LOCAL_S3_ENDPOINT } : {}),
    ...(vars.SLUICE_INGEST_DLQ_URL ? { ingestDeadLetterQueueUrl: vars.SLUICE_INGEST_DLQ_URL } : {}),
    // A deployed stack's clients read the SDK's environment themselves (profiles, roles, session tokens).
    dynamodb:
      source === 'environment'
        ? {}
        : {
            ...(vars.AWS_ENDPOINT_URL_DYNAMODB ? { endpoint: vars.AWS_ENDPOINT_URL_DYNAMODB } : {}),
            ...(vars.AWS_REGION ? { region: vars.AWS_REGION } : {}),
            ...(accessKeyId && secretAccessKey ? { credentials: { accessKeyId, secretAccessKey } } : {}),
          },
  };
}

/** The tables the CLI's commands work on, as store options. */
export interface CliTables {
  control: { tableName: string };
  events: { eventsTable: string; subscribersTable: string };
}
