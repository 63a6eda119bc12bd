/**
 * Backfills and the full history of the second product's four datasets, end to end (issue 24): the regular
 * export of a few hours of `message_events` (a message whose status changes across windows), `project_summary`,
 * `opt_out_events` and `click_events` as Parquet, in the `run_hour` layout (`v1/schema_type=…/hour=`) and in the
 * `date` layout; then a range backfill of the same hours, and, once the archive holds the rows and the hot log
 * no longer does, a full-history backfill (`"from": "earliest"`): each writes the regular export's files, names
 * and bytes. DuckDB reads the files with the documented types, and a consumer keeping the greatest `updated_at`
 * per `message_id` gets each message's latest status.
 */
import {
  type EventDataset,
  PARQUET_COLUMNS,
  SECOND_PRODUCT_DATASETS,
  type SecondProductDataset,
} from '@sluice/core';
import { generateDatasetRows } from '@sluice/eventlog';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openParquetReader, type ParquetReader } from '../helpers/parquet.js';
import {
  backfillView,
  createLocalExport,
  type E2eHarness,
  expireFromEventLog,
  ingestAll,
  manualRunInput,
  startE2eHarness,
} from './harness.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies, already checked against the OpenAPI by the client
type Json = Record<string, any>;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** Five whole hours of rows, the last ended three hours before now (older than the hot log of 90 minutes). */
const H0 = Math.floor((Date.now() - 10 * MINUTE) / HOUR) * HOUR - 8 * HOUR;
const HOURS = 5;
/** The hot log's retention once the archive holds the rows (days, the variable's unit): 90 minutes. */
const HOT_RETENTION_DAYS = String((90 * MINUTE) / DAY);
/**
 * The retention the rows are exported, backfilled by range and compacted under: back to half an hour before the
 * first hour (the horizon moves on while the test runs).
 */
const INGEST_RETENTION_DAYS = String((Date.now() - (H0 - 30 * MINUTE)) / DAY);
const iso = (ms: number) => new Date(ms).toISOString();
const at = (hour: number, minute: number) => H0 + hour * HOUR + minute * MINUTE;

/** DuckDB's type of each of the reference's types. */
const DUCKDB_TYPE: Record<string, string> = {
  string: 'VARCHAR',
  int32: 'INTEGER',
  boolean: 'BOOLEAN',
  timestamp_millis_utc: 'TIMESTAMP WITH TIME ZONE',
};

/**
 * A message whose status changes across three windows, a rename and a click between (kept, not emitted: they go
 * out with the receipt), and a rename and a click after the receipt (kept, and never written).
 */
const tracked = [
  {
    dataset: 'message_events',
    message_id: 'msg_tracked',
    conversation_id: 'conv_tracked',
    project_id: 'prj_tracked',
    project_name: 'GOTV',
    direction: 'outbound',
    status: 'queued',
    from_phone_number: '471016',
    to_phone_number: '5555550123',
    media_url_count: 0,
    send_type: 'test',
    contact_id: 'contact_tracked',
    created_at: iso(at(0, 30)),
    updated_at: iso(at(0, 30)),
    recorded_at: at(0, 30),
  },
  { dataset: 'message_events', message_id: 'msg_tracked', status: 'sent', updated_at: iso(at(1, 10)) },
  {
    dataset: 'message_events',
    message_id: 'msg_tracked',
    project_name: 'GOTV final',
    url_click_count: 1,
    updated_at: iso(at(2, 20)),
  },
  {
    dataset: 'message_events',
    message_id: 'msg_tracked',
    status: 'delivered',
    delivered_at: iso(at(3, 40)),
    updated_at: iso(at(3, 40)),
  },
  // After its last status change: held, never written (no status change follows).
  {
    dataset: 'message_events',
    message_id: 'msg_tracked',
    project_name: 'GOTV 2027',
    url_click_count: 2,
    updated_at: iso(at(4, 10)),
  },
].map((row) => ({ ...row, recorded_at: Date.parse(row.updated_at) }));

let h: E2eHarness;
let reader: ParquetReader;
const generated = new Map<SecondProductDataset, Record<string, unknown>[]>();

beforeAll(async () => {
  // The API reads its retention when it starts: the one the range backfill is asked under.
  process.env.SLUICE_EVENT_RETENTION_DAYS = INGEST_RETENTION_DAYS;
  h = await startE2eHarness();
  reader = await openParquetReader();
  const ws = h.ws.workspaceId;
  for (const dataset of SECOND_PRODUCT_DATASETS) {
    const rows = [
      ...generateDatasetRows({
        dataset,
        count: 150,
        workspaceId: ws,
        seed: 24,
        from: H0 + MINUTE,
        to: H0 + HOURS * HOUR - MINUTE,
      }),
    ];
    generated.set(dataset, rows);
    await ingestAll(h.events, ws, rows);
  }
  for (const row of tracked) await ingestAll(h.events, ws, [row]);
}, 300_000);

afterAll(async () => {
  delete process.env.SLUICE_EVENT_RETENTION_DAYS;
  await reader?.close();
  expect(await h.close()).toEqual([]);
});

/** The Parquet data files under a prefix (not manifests, markers or recipes), key below it to bytes. */
async function parquetFiles(prefix: string): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  for (const object of await h.list(prefix)) {
    if (!object.key.endsWith('.parquet') || object.key.includes('/_sluice/')) continue;
    files.set(object.key.slice(prefix.length + 1), await h.readBytes(object.key));
  }
  return files;
}

/** Runs ExportRun with the trigger until the backfill is no longer queued or running; returns its last view. */
async function runBackfill(id: string, backfillId: string): Promise<Json> {
  const workflows = await h.workflows();
  for (let run = 0; run < 8; run++) {
    const outcome = await workflows.runExportRun({
      workspaceId: h.ws.workspaceId,
      destinationId: id,
      trigger: 'backfill',
    });
    expect(outcome.status).toBe('succeeded');
    const view = await backfillView(h, id, backfillId);
    if (view.status !== 'running' && view.status !== 'queued') return view;
  }
  throw new Error('the backfill did not finish in 8 runs');
}

async function newBackfill(id: string, body: Json): Promise<string> {
  const created = await h.ws.client.post<Json>(`/data-exports/${id}/backfills`, body);
  expect(created.status, JSON.stringify(created.body)).toBe(202);
  return created.body.backfill.id as string;
}

/** The files put where DuckDB reads them: file key to DuckDB path. */
async function readAll(files: Map<string, Buffer>): Promise<Map<string, string>> {
  const paths = new Map<string, string>();
  for (const [key, bytes] of files) paths.set(key, await reader.put(`history/${key}`, bytes));
  return paths;
}

describe("backfills and the full history of the second product's datasets", () => {
  it('write the regular export’s Parquet files, byte for byte, in the run_hour and the date layout', async () => {
    // Prepare: the regular export of the five hours in each layout, while the hot log holds them.
    const hotWorkflows = await h.workflows();
    const common = {
      startFromMs: H0,
      datasets: [...SECOND_PRODUCT_DATASETS],
      frequency: 'hourly',
      fileFormat: { format: 'parquet' },
    };
    const exports = [
      await createLocalExport(h, {
        ...common,
        prefixRoot: 'e2e-second-history-run-hour/',
        layout: { layout: 'run_hour', schedule: { minute: 5 } },
      }),
      await createLocalExport(h, { ...common, prefixRoot: 'e2e-second-history-date/' }),
    ];
    const regular: Map<string, Buffer>[] = [];
    for (const { id, prefix } of exports) {
      for (let run = 0; run < 5; run++) {
        const outcome = await hotWorkflows.runExportRun(manualRunInput(h, id));
        expect(outcome.status).toBe('succeeded');
        if (!outcome.runAgain) break;
      }
      regular.push(await parquetFiles(prefix));
    }
    const [runHour, date] = regular as [Map<string, Buffer>, Map<string, Buffer>];
    for (const dataset of SECOND_PRODUCT_DATASETS) {
      // Every dataset has files in both layouts; run_hour's under v1/schema_type=<dataset>/…/hour=HH/.
      expect(
        [...runHour.keys()].filter((key) => key.startsWith(`v1/schema_type=${dataset}/`)).length,
      ).toBeGreaterThan(0);
      expect([...date.keys()].filter((key) => key.startsWith(`${dataset}/`)).length).toBeGreaterThan(0);
    }
    for (const key of runHour.keys())
      expect(key).toMatch(/^v1\/schema_type=[a-z_]+\/year=\d{4}\/month=\d\d\/day=\d\d\/hour=\d\d\//);

    // Act 1: a range backfill of the five hours, the bucket emptied first.
    const ranged: Map<string, Buffer>[] = [];
    for (const { id, prefix } of exports) {
      await h.clear(prefix);
      const backfillId = await newBackfill(id, { from: iso(H0), to: iso(H0 + HOURS * HOUR) });
      expect((await runBackfill(id, backfillId)).status).toBe('succeeded');
      ranged.push(await parquetFiles(prefix));
    }

    // Act 2: the archive takes the rows, the hot log loses them (the engine's retention: 90 minutes), then a full
    // history of each export.
    const { localArchiveFunction } = await import('@sluice/local');
    const compact = localArchiveFunction({
      ...process.env,
      SLUICE_EVENT_RETENTION_DAYS: INGEST_RETENTION_DAYS,
    });
    expect(await compact({})).toMatchObject({ failures: 0 });
    const hours = SECOND_PRODUCT_DATASETS.flatMap((dataset) =>
      Array.from({ length: HOURS }, (_, hour) => ({
        dataset: dataset as EventDataset,
        hourMs: H0 + hour * HOUR,
      })),
    );
    expect(await expireFromEventLog(h.ws.workspaceId, hours)).toBeGreaterThan(0);
    process.env.SLUICE_EVENT_RETENTION_DAYS = HOT_RETENTION_DAYS;
    const full: Map<string, Buffer>[] = [];
    for (const { id, prefix } of exports) {
      await h.clear(prefix);
      const backfillId = await newBackfill(id, { from: 'earliest' });
      expect((await runBackfill(id, backfillId)).status).toBe('succeeded');
      full.push(await parquetFiles(prefix));
    }

    // Assess: the same names and bytes, in both layouts, from the hot log and from the archive.
    for (const [index, files] of regular.entries()) {
      for (const written of [ranged[index]!, full[index]!]) {
        expect([...written.keys()].sort()).toEqual([...files.keys()].sort());
        for (const [key, bytes] of files) expect(written.get(key)?.equals(bytes), key).toBe(true);
      }
    }
    // DuckDB reads every column with the documented type.
    const paths = await readAll(runHour);
    for (const dataset of SECOND_PRODUCT_DATASETS) {
      const first = [...paths.entries()].find(([key]) => key.startsWith(`v1/schema_type=${dataset}/`))![1];
      expect(await reader.describe(first), dataset).toEqual(
        PARQUET_COLUMNS[dataset].map((column) => ({ name: column.name, type: DUCKDB_TYPE[column.type] })),
      );
    }
    // The tracked message went out in three windows (queued, sent, delivered), each row with the columns "at
    // export time" as held at its status change: the rename and click went with the receipt; those after it are
    // held by Sluice but in no file, also not in the windows the backfills wrote later (the same bytes).
    const messages = [...paths.entries()]
      .filter(([key]) => key.startsWith('v1/schema_type=message_events/'))
      .map(([, path]) => `'${path}'`)
      .join(', ');
    expect(
      await reader.query(
        `SELECT status, project_name, url_click_count::INTEGER AS clicks FROM read_parquet([${messages}])
         WHERE message_id = 'msg_tracked' ORDER BY updated_at`,
      ),
    ).toEqual([
      { status: 'queued', project_name: 'GOTV', clicks: null },
      { status: 'sent', project_name: 'GOTV', clicks: null },
      { status: 'delivered', project_name: 'GOTV final', clicks: 1 },
    ]);
    // A consumer keeping the greatest updated_at per message_id gets each message's latest status.
    const latest = await reader.query(
      `SELECT message_id, status FROM read_parquet([${messages}])
       QUALIFY row_number() OVER (PARTITION BY message_id ORDER BY updated_at DESC) = 1`,
    );
    const expected = new Map<string, unknown>();
    for (const row of [...generated.get('message_events')!, ...tracked]) {
      if (row.status !== undefined) expected.set(String(row.message_id), row.status);
    }
    expect(new Map(latest.map((row) => [String(row.message_id), row.status]))).toEqual(expected);
  }, 600_000);
});
