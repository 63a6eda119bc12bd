import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { DynamoDBClient, paginateQuery, type WriteRequest } from '@aws-sdk/client-dynamodb';
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
} from '@aws-sdk/client-s3';
import type { ControlStore, CursorStore, LeaseStore } from '@sluice/control';
import { CONTROL_TABLE, type EventDataset } from '@sluice/core';
import { batchWrite, EVENT_SHARDS, type EventLogWriter, eventPk, segmentPk } from '@sluice/eventlog';
import type { ApiServerOptions, LocalAppWorkflowsOptions } from '@sluice/local';
import { createLocalTables, localDynamoDbClient, type LocalWorkflows } from '@sluice/devstack';
import type { ContractHarness, TestWorkspace } from '../helpers/contract-harness.js';
import { eventTables } from '../helpers/tables.js';

/** One object of the local bucket. */
export interface BucketObject {
  key: string;
  size: number;
  lastModified: number;
}

/** The e2e environment: the API over HTTP, the stores, the bucket, and a local workflow runner factory. */
export interface E2eHarness {
  api: ContractHarness;
  ws: TestWorkspace;
  store: ControlStore;
  cursors: CursorStore;
  leases: LeaseStore;
  events: EventLogWriter;
  /** The control table of this test file only: Dispatch sees no other file's destinations. */
  controlTable: string;
  /** A runner of the synthesized definitions with the real handlers (plus the given options). */
  workflows(options?: Omit<LocalAppWorkflowsOptions, 'definitions'>): Promise<LocalWorkflows>;
  /** Every object under a prefix of the local bucket. */
  list(prefix: string): Promise<BucketObject[]>;
  /** The lines of a `.jsonl.gz` object. */
  readLines(key: string): Promise<string[]>;
  /** The raw bytes of an object. */
  readBytes(key: string): Promise<Buffer>;
  /** Copies every object under `prefix/` into `dir`, keeping the key below the prefix. */
  download(prefix: string, dir: string): Promise<void>;
  /** Multipart uploads started and neither completed nor aborted, under a prefix. */
  pendingUploads(prefix: string): Promise<string[]>;
  /** Deletes every object under a prefix. */
  clear(prefix: string): Promise<void>;
  /** Stops the API; returns the secrets seen in any response or log line (expected: none). */
  close(): Promise<string[]>;
}

/** A fresh id with a prefix. */
export function uniqueId(prefix: string): string {
  return `${prefix}${randomBytes(6).toString('hex')}`;
}

/**
 * Starts the e2e environment on the global setup's local services. Gives this test file its own control table
 * (created here, its name put in `SLUICE_CONTROL_TABLE` before any module reading it is loaded), so the
 * Dispatch of this file never starts runs for destinations of the contract tests running beside it.
 * Everything that reads the environment at load is therefore imported dynamically, after.
 */
export async function startE2eHarness(
  options: Pick<ApiServerOptions, 'site' | 'checkLocalLifecycle'> = {},
): Promise<E2eHarness> {
  const endpoint = process.env.AWS_ENDPOINT_URL_DYNAMODB;
  if (!endpoint) throw new Error('AWS_ENDPOINT_URL_DYNAMODB is not set: run the tests through vitest');
  const controlTable = uniqueId('sluice-control-e2e-');
  const dynamo = localDynamoDbClient(endpoint);
  await createLocalTables(dynamo, [{ name: controlTable, spec: CONTROL_TABLE }]);
  dynamo.destroy();
  process.env.SLUICE_CONTROL_TABLE = controlTable;

  const [{ startContractHarness }, control, eventlog, { localWorkflows, loadWorkflowDefinitions }] =
    await Promise.all([
      import('../helpers/contract-harness.js'),
      import('@sluice/control'),
      import('@sluice/eventlog'),
      import('@sluice/local'),
    ]);
  const api = await startContractHarness(options);
  const ws = await api.newWorkspace();
  const definitions = await loadWorkflowDefinitions();
  const s3 = api.s3;
  const bucket = 'local-exports';

  const list = async (prefix: string): Promise<BucketObject[]> => {
    const objects: BucketObject[] = [];
    let token: string | undefined;
    do {
      const page = await s3.send(
        new ListObjectsV2Command({ Bucket: bucket, Prefix: `${prefix}/`, ContinuationToken: token }),
      );
      for (const item of page.Contents ?? []) {
        objects.push({
          key: item.Key ?? '',
          size: item.Size ?? 0,
          lastModified: item.LastModified?.getTime() ?? 0,
        });
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return objects.sort((a, b) => a.key.localeCompare(b.key));
  };
  const readBytes = async (key: string): Promise<Buffer> => {
    const result = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return Buffer.from((await result.Body?.transformToByteArray()) ?? []);
  };

  return {
    api,
    ws,
    store: new control.ControlStore({ tableName: controlTable }),
    cursors: new control.CursorStore({ tableName: controlTable }),
    leases: new control.LeaseStore({ tableName: controlTable }),
    events: new eventlog.EventLogWriter({ ...eventTables, explicitRecordedAt: 'unchecked' }),
    controlTable,
    workflows: (options = {}) => localWorkflows({ ...options, definitions }),
    list,
    readBytes,
    async readLines(key) {
      const text = gunzipSync(await readBytes(key)).toString('utf8');
      return text === '' ? [] : text.replace(/\n$/, '').split('\n');
    },
    async download(prefix, dir) {
      for (const object of await list(prefix)) {
        const target = join(dir, object.key.slice(prefix.length + 1));
        await mkdir(dirname(target), { recursive: true });
        await writeFile(target, await readBytes(object.key));
      }
    },
    async pendingUploads(prefix) {
      const result = await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: `${prefix}/` }));
      return (result.Uploads ?? []).map((upload) => upload.Key ?? '');
    },
    async clear(prefix) {
      const keys = (await list(prefix)).map((object) => ({ Key: object.key }));
      if (keys.length > 0)
        await s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys } }));
    },
    close: () => api.closeAndFindLeaks(),
  };
}

/** Ingests events in chunks; returns how many were accepted. */
export async function ingestAll(
  writer: EventLogWriter,
  workspaceId: string,
  events: readonly Record<string, unknown>[],
  chunk = 5_000,
): Promise<number> {
  let accepted = 0;
  for (let i = 0; i < events.length; i += chunk) {
    const result = await writer.ingestEvents(workspaceId, events.slice(i, i + chunk));
    if (result.invalid.length > 0) throw new Error(`refused: ${JSON.stringify(result.invalid.slice(0, 3))}`);
    accepted += result.accepted;
  }
  return accepted;
}

/**
 * Creates an export of the local bucket through the API, under a fresh prefix below `prefixRoot`, starting at
 * `startFromMs`; returns its id and prefix.
 */
export async function createLocalExport(
  h: E2eHarness,
  options: {
    prefixRoot: string;
    startFromMs: number;
    datasets: string[];
    frequency: string;
    /** `format` and `compression` of the request, when given. */
    fileFormat?: { format?: string; compression?: string };
    /** `layout` and `schedule` of the request, when given. */
    layout?: { layout: string; schedule?: Record<string, number> };
  },
): Promise<{ id: string; prefix: string }> {
  const prefix = uniqueId(options.prefixRoot);
  const created = await h.ws.client.post<{ dataExport: { id: string } }>(
    '/data-exports',
    h.api.createBody({
      pathPrefix: prefix,
      startFrom: new Date(options.startFromMs).toISOString(),
      datasets: options.datasets,
      frequency: options.frequency,
      ...options.fileFormat,
      ...options.layout,
    }),
  );
  if (created.status !== 201)
    throw new Error(`create answered ${created.status}: ${JSON.stringify(created.body)}`);
  return { id: created.body.dataExport.id, prefix };
}

/** The ExportRun input of a manual run of an export of the harness's workspace. */
export function manualRunInput(h: E2eHarness, destinationId: string) {
  return { workspaceId: h.ws.workspaceId, destinationId, trigger: 'manual' };
}

/** A backfill as the API shows it (GET …/backfills/{backfillId}), after checking the answer is 200. */
export async function backfillView(
  h: E2eHarness,
  destinationId: string,
  backfillId: string,
  // biome-ignore lint/suspicious/noExplicitAny: a response body, already checked against the OpenAPI by the client
): Promise<Record<string, any>> {
  // biome-ignore lint/suspicious/noExplicitAny: as above
  const response = await h.ws.client.get<Record<string, any>>(
    `/data-exports/${destinationId}/backfills/${backfillId}`,
  );
  if (response.status !== 200) throw new Error(`GET backfill answered ${response.status}`);
  return response.body.backfill;
}

/** The export data files under a prefix (not the connection test's, manifests or markers), key below it to bytes. */
export async function exportFiles(h: E2eHarness, prefix: string): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  for (const object of await h.list(prefix)) {
    if (!object.key.endsWith('.jsonl.gz')) continue;
    files.set(object.key.slice(prefix.length + 1), await h.readBytes(object.key));
  }
  return files;
}

/**
 * What DynamoDB's TTL does to expired items (DynamoDB Local never does): deletes a workspace's event log
 * items of the given (dataset, UTC hour start) pairs: segments and per-row items. Returns how many rows it deleted.
 */
export async function expireFromEventLog(
  workspaceId: string,
  hours: readonly { dataset: EventDataset; hourMs: number }[],
): Promise<number> {
  const client = new DynamoDBClient({});
  const requests: WriteRequest[] = [];
  let rows = 0;
  for (const { dataset, hourMs } of hours) {
    // The hour's segments and its per-row items (written before segments).
    const partitions = [
      segmentPk(workspaceId, dataset, hourMs),
      ...Array.from({ length: EVENT_SHARDS }, (_, shard) => eventPk(workspaceId, dataset, hourMs, shard)),
    ];
    for (const pk of partitions) {
      const pages = paginateQuery(
        { client },
        {
          TableName: eventTables.eventsTable,
          KeyConditionExpression: 'PK = :pk',
          ExpressionAttributeValues: { ':pk': { S: pk } },
          ProjectionExpression: 'PK, SK, #count',
          ExpressionAttributeNames: { '#count': 'count' },
        },
      );
      for await (const page of pages) {
        for (const item of page.Items ?? []) {
          requests.push({ DeleteRequest: { Key: { PK: item.PK!, SK: item.SK! } } });
          rows += Number(item.count?.N ?? 1);
        }
      }
    }
  }
  await batchWrite(client, eventTables.eventsTable, requests);
  client.destroy();
  return rows;
}
