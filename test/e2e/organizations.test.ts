/**
 * The done check of issue 27 (items 3 to 5), end to end: a parent organisation's export that includes two chosen
 * children, then a third linked later under `["*"]`, and one of the first two unlinked mid-way, through the
 * synthesized ExportRun state machine with the real handlers on DynamoDB Local and s3rver, read back with DuckDB
 * by the export's own reading recipe. The links are made with the `OrganizationStore` (the CLI's `orgs link` and
 * `orgs unlink`), at given times in the past, and the export's list is changed with those times, so the one run
 * crosses every change; `packages/engine/src/organizations.test.ts` follows changes between runs.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { OrganizationStore } from '@sluice/control';
import { HOUR_MS, recipesFor } from '@sluice/core';
import { generateDatasetRows } from '@sluice/eventlog';
import type { LocalWorkflows } from '@sluice/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventTables } from '../helpers/tables.js';
import { createLocalExport, type E2eHarness, ingestAll, manualRunInput, startE2eHarness } from './harness.js';

const MINUTE_MS = 60_000;
/** The export's start: six whole hours ago. */
const T0 = Math.floor((Date.now() - 7 * HOUR_MS) / HOUR_MS) * HOUR_MS;
/** The rows lie in the export's first five hours, all of them complete windows. */
const END = T0 + 5 * HOUR_MS;

let h: E2eHarness;
let workflows: LocalWorkflows;
/** The export of the first test, for the erasure after it. */
let done: { id: string; prefix: string; child: string } | undefined;
const ingested = new Map<string, { id: string; recordedMs: number }[]>();

beforeAll(async () => {
  h = await startE2eHarness();
  workflows = await h.workflows();
}, 300_000);

afterAll(async () => {
  expect(await h.close()).toEqual([]);
});

/** A workspace with 80 click events spread over the export's five hours. */
async function workspaceWithRows(seed: number): Promise<string> {
  const { workspaceId } = await h.api.newWorkspace();
  const rows = [
    ...generateDatasetRows({ dataset: 'click_events', count: 80, workspaceId, seed, from: T0, to: END }),
  ] as unknown as Record<string, unknown>[];
  await ingestAll(h.events, workspaceId, rows);
  ingested.set(
    workspaceId,
    rows.map((row) => ({ id: String(row.click_id), recordedMs: Date.parse(String(row.recorded_at)) })),
  );
  return workspaceId;
}

/** The rows of a Parquet object of the bucket, as DuckDB reads them. */
async function parquetRows(key: string): Promise<Record<string, unknown>[]> {
  const folder = await mkdtemp(join(tmpdir(), 'sluice-e2e-orgs-file-'));
  const path = join(folder, 'file.parquet');
  await writeFile(path, await h.readBytes(key));
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    return (await connection.runAndReadAll(`SELECT * FROM read_parquet('${path}')`)).getRowObjectsJson();
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/** The click ids of a workspace recorded in `(fromMs, toMs]`, as `<organization_id>/<click_id>`. */
function rowsOf(workspaceId: string, fromMs: number, toMs: number): string[] {
  return (ingested.get(workspaceId) ?? [])
    .filter((row) => fromMs < row.recordedMs && row.recordedMs <= toMs)
    .map((row) => `${workspaceId}/${row.id}`);
}

describe("a parent organisation's export with its children", () => {
  it('holds every row of the included organisations exactly once with their organization_id, nothing of the others', async () => {
    // Prepare: the parent P; children A and B chosen at creation; C linked later, under ["*"]; B unlinked
    // mid-way; E a child before the list became ["*"] and unlinked before it; F another parent's child; G no one's
    const parent = h.ws.workspaceId;
    const [a, b, c, e, f, g, other] = [
      await workspaceWithRows(1),
      await workspaceWithRows(2),
      await workspaceWithRows(3),
      await workspaceWithRows(4),
      await workspaceWithRows(5),
      await workspaceWithRows(6),
      (await h.api.newWorkspace()).workspaceId,
    ] as [string, string, string, string, string, string, string];
    const parentRows = [
      ...generateDatasetRows({
        dataset: 'click_events',
        count: 80,
        workspaceId: parent,
        seed: 7,
        from: T0,
        to: END,
      }),
    ] as unknown as Record<string, unknown>[];
    await ingestAll(h.events, parent, parentRows);
    ingested.set(
      parent,
      parentRows.map((row) => ({
        id: String(row.click_id),
        recordedMs: Date.parse(String(row.recorded_at)),
      })),
    );
    const orgs = new OrganizationStore({ tableName: h.controlTable });
    const at = (ms: number) => new Date(ms);
    await orgs.link(parent, a, at(T0 - HOUR_MS));
    await orgs.link(parent, b, at(T0 - HOUR_MS));
    await orgs.link(parent, e, at(T0 - HOUR_MS));
    await orgs.unlink(parent, e, at(T0 + HOUR_MS + 10 * MINUTE_MS));
    await orgs.link(other, f, at(T0 - HOUR_MS));
    const starred = T0 + 2 * HOUR_MS + 7 * MINUTE_MS;
    const cLinked = T0 + 2 * HOUR_MS + 41 * MINUTE_MS;
    const bUnlinked = T0 + 3 * HOUR_MS + 23 * MINUTE_MS;
    await orgs.link(parent, c, at(cLinked));
    await orgs.unlink(parent, b, at(bUnlinked));
    const created = await createLocalExport(h, {
      prefixRoot: 'e2e-orgs/',
      startFromMs: T0,
      datasets: ['click_events'],
      frequency: 'hourly',
      fileFormat: { format: 'parquet' },
    });
    // The list as it was: [A, B] from the start, then ["*"] from `starred` (A keeps its own entry's time)
    await h.store.updateDestination(parent, created.id, {
      childOrganizations: [a, b, '*'],
      childOrganizationsAddedAt: {
        [a]: new Date(T0).toISOString(),
        [b]: new Date(T0).toISOString(),
        '*': new Date(starred).toISOString(),
      },
    });

    // Act
    const outcome = await workflows.runExportRun(manualRunInput(h, created.id));

    // Assess: read back with the export's own DuckDB recipe (organization_id from the partition) and with the
    // files' own organization_id column
    expect(outcome.status).toBe('succeeded');
    const folder = await mkdtemp(join(tmpdir(), 'sluice-e2e-orgs-'));
    await h.download(created.prefix, join(folder, created.prefix));
    const [recipe] = recipesFor({
      dataset: 'click_events',
      layout: 'date',
      format: 'parquet',
      bucket: 'local-exports',
      pathPrefix: created.prefix,
      duckdbRoot: join(folder, created.prefix),
      partitioned: true,
    }).filter((candidate) => candidate.engine === 'duckdb');
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    try {
      await connection.run((recipe as { text: string }).text);
      const read = async (sql: string) =>
        (await connection.runAndReadAll(sql)).getRowObjectsJson().map((row) => String(row.row));
      const viaPartition = await read(
        `SELECT organization_id || '/' || click_id AS row FROM click_events ORDER BY row`,
      );
      const viaColumn = await read(
        `SELECT organization_id || '/' || click_id AS row FROM read_parquet('${join(folder, created.prefix)}/click_events/date=*/organization_id=*/*.parquet', hive_partitioning = false) ORDER BY row`,
      );
      const expected = [
        ...rowsOf(parent, T0, END),
        ...rowsOf(a, T0, END),
        ...rowsOf(b, T0, bUnlinked),
        ...rowsOf(c, cLinked, END),
      ].sort();
      expect(expected.length).toBeGreaterThan(200);
      expect(viaPartition).toEqual(expected);
      expect(viaColumn).toEqual(expected);
      // Nothing of E (unlinked before "*" was added), F (another parent's child) or G (no one's child)
      for (const outsider of [e, f, g])
        expect(viaColumn.some((row) => row.startsWith(`${outsider}/`))).toBe(false);
      expect(new Set(viaColumn).size).toBe(viaColumn.length);
      done = { ...created, child: a };
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  }, 300_000);

  it("erasing a person in a child's workspace erases them from the parent's files written after", async () => {
    // Prepare: a contact of child A with rows in the export
    const { id, prefix, child } = done as NonNullable<typeof done>;
    const partition = async () => {
      const rows: Record<string, unknown>[] = [];
      for (const object of await h.list(prefix)) {
        if (!object.key.includes(`/organization_id=${child}/`) || !object.key.endsWith('.parquet')) continue;
        rows.push(...(await parquetRows(object.key)));
      }
      return rows;
    };
    const before = await partition();
    const contact = String(before.find((row) => row.contact_id !== null)?.contact_id);
    const others = new Map<string, Buffer>();
    for (const object of await h.list(prefix)) {
      if (object.key.endsWith('.parquet') && !object.key.includes(`/organization_id=${child}/`))
        others.set(object.key, await h.readBytes(object.key));
    }
    const [archive, control, eventlog, { DynamoDBClient }] = await Promise.all([
      import('@sluice/archive'),
      import('@sluice/control'),
      import('@sluice/eventlog'),
      import('@aws-sdk/client-dynamodb'),
    ]);
    const client = new DynamoDBClient({});
    const eraser = new archive.Eraser({
      client,
      ...eventTables,
      archive: new archive.ArchiveBucket({
        bucket: process.env.SLUICE_ARCHIVE_BUCKET as string,
        client: archive.createArchiveClient({
          localEndpoint: process.env.SLUICE_LOCAL_S3_ENDPOINT as string,
        }),
      }),
      erasureLog: new control.ErasureLogStore({ tableName: h.controlTable }),
      rejected: new eventlog.DynamoRejectedEvents({ tableName: h.controlTable, client }),
      hotRetentionMs: 35 * 24 * HOUR_MS,
    });

    // Act: `sluice erase --workspace <child> --contact <id>`, then a backfill of the export's range
    await eraser.erase(child, { kind: 'contact', contactId: contact });
    const created = await h.ws.client.post<{ backfill: { id: string } }>(`/data-exports/${id}/backfills`, {
      datasets: ['click_events'],
      from: new Date(T0).toISOString(),
      to: new Date(END).toISOString(),
    });
    expect(created.status).toBe(202);
    const outcome = await workflows.runExportRun({
      workspaceId: h.ws.workspaceId,
      destinationId: id,
      trigger: 'backfill',
    });

    // Assess: the contact's rows left A's partition, every other row of it stayed; the other organisations'
    // files are the same bytes
    expect(outcome.status).toBe('succeeded');
    const after = await partition();
    expect(after.some((row) => row.contact_id === contact)).toBe(false);
    const erasedPhones = new Set(
      before.filter((row) => row.contact_id === contact).map((row) => row.phone_number),
    );
    const kept = before.filter((row) => row.contact_id !== contact && !erasedPhones.has(row.phone_number));
    const afterIds = new Set(after.map((row) => row.click_id));
    for (const row of kept) expect(afterIds.has(row.click_id)).toBe(true);
    expect(after.length).toBeLessThan(before.length);
    for (const [key, bytes] of others) expect((await h.readBytes(key)).equals(bytes), key).toBe(true);
    client.destroy();
  }, 300_000);
});
