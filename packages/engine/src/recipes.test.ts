import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import {
  type Dataset,
  DATASETS,
  DAY_MS,
  type Destination,
  ENGINE_TYPES,
  type ExportFormat,
  HOUR_MS,
  type Layout,
  PARQUET_COLUMNS,
  type RecipeInput,
  recipesFor,
  startOfUtcDay,
} from '@sluice/core';
import { EventLogWriter, generateEvents, generateSubscribers } from '@sluice/eventlog';
import nodeSqlParser from 'node-sql-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventTables } from '../../../test/helpers/tables.js';
import { engineHarness } from './engine-harness.test-support.js';
import { LOCAL_BUCKET, listKeys, readBytes } from './local-bucket.test-support.js';

/**
 * The reading recipes (issue 25, item 5), generated from the dataset columns the files are written with:
 * every DuckDB recipe runs here on files the engine exported (both layouts, both formats) and reads every row
 * with the Parquet schema's columns and types; the Athena and BigQuery DDL parse (node-sql-parser) to exactly
 * those columns. Not run or parsed here: Athena's EXTERNAL/PARTITIONED/TBLPROPERTIES clauses and the JSON
 * SerDe, the Glue notes, Snowflake (no parser for its dialect takes TIMESTAMP_TZ or ARRAY columns), BigQuery's
 * WITH PARTITION COLUMNS/OPTIONS, and the Databricks Auto Loader (PySpark).
 */

const workspaceId = `ws_${randomUUID()}`;
const DAY0 = startOfUtcDay(Date.now()) - 2 * DAY_MS;
const NOW = DAY0 + 6 * HOUR_MS + 5 * 60_000;
const EVENTS = ['email_events', 'sms_events', 'custom_events'] as const;
const counts = new Map<Dataset, number>();
let folder: string;
let instance: DuckDBInstance;
let connection: DuckDBConnection;

const harness = engineHarness({ workspaceId, folder: 'recipes-test', nowMs: NOW });

/** An export of `layout` and `format` on the local bucket, run until done, its files copied under `folder`. */
async function exported(layout: Layout, format: ExportFormat): Promise<Destination> {
  const destination = await harness.createDestination({
    name: 'recipes',
    datasets: layout === 'run_hour' ? [...EVENTS] : [...EVENTS, 'subscribers'],
    startFrom: new Date(DAY0 - 1).toISOString(),
    fileFormat: format === 'parquet' ? { format, compression: 'snappy' } : { format, compression: 'gzip' },
    ...(layout === 'run_hour' ? { layout, schedule: { minute: 5 } } : {}),
    createdMs: DAY0 - HOUR_MS,
  });
  await harness.runUntilDone(destination, { maxRuns: 10 });
  for (const key of await listKeys(destination.pathPrefix)) {
    const path = join(folder, key);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, await readBytes(key));
  }
  return destination;
}

async function query(sql: string): Promise<Record<string, unknown>[]> {
  return (await connection.runAndReadAll(sql)).getRowObjectsJson() as Record<string, unknown>[];
}

/** DuckDB's DESCRIBE name of each recipe type. */
const DESCRIBED: Record<string, string> = { TIMESTAMPTZ: 'TIMESTAMP WITH TIME ZONE' };

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'sluice-recipes-'));
  instance = await DuckDBInstance.create(':memory:');
  connection = await instance.connect();
  const writer = new EventLogWriter({ ...eventTables, explicitRecordedAt: 'unchecked' });
  const events = [
    ...generateEvents({
      count: 300,
      workspaceId,
      seed: 5,
      from: DAY0,
      to: DAY0 + 5 * HOUR_MS,
      mix: { email_events: 1, sms_events: 1, custom_events: 1 },
    }),
  ] as unknown as Record<string, unknown>[];
  for (const event of events) {
    const dataset = event.dataset as Dataset;
    counts.set(dataset, (counts.get(dataset) ?? 0) + 1);
  }
  expect((await writer.ingestEvents(workspaceId, events)).invalid).toEqual([]);
  const subscribers = [...generateSubscribers({ count: 40, seed: 5, workspaceId })] as unknown as Record<
    string,
    unknown
  >[];
  await writer.upsertSubscribers(workspaceId, subscribers);
  counts.set('subscribers', subscribers.length);
}, 120_000);

afterAll(() => {
  connection?.closeSync();
  instance?.closeSync();
});

describe('DuckDB recipes, run on exported files', () => {
  it.each([
    ['date', 'parquet'],
    ['date', 'jsonl'],
    ['run_hour', 'parquet'],
    ['run_hour', 'jsonl'],
  ] as const)(
    '%s layout, %s: every row, with the Parquet schema columns and types',
    async (layout, format) => {
      const destination = await exported(layout, format);
      for (const dataset of destination.datasets) {
        const input: RecipeInput = {
          dataset,
          layout,
          format,
          bucket: LOCAL_BUCKET,
          pathPrefix: destination.pathPrefix,
          duckdbRoot: join(folder, destination.pathPrefix),
        };
        const recipe = recipesFor(input).find((candidate) => candidate.engine === 'duckdb');
        expect(recipe, dataset).toBeDefined();

        await query((recipe as { text: string }).text);

        const rows = await query(`SELECT count(*)::INTEGER AS n FROM "${dataset}"`);
        expect(rows, `${layout} ${format} ${dataset}`).toEqual([{ n: counts.get(dataset) }]);
        const described = await query(`DESCRIBE "${dataset}"`);
        const columns = PARQUET_COLUMNS[dataset];
        expect(
          described.slice(0, columns.length).map((row) => [row.column_name, row.column_type]),
          `${layout} ${format} ${dataset}`,
        ).toEqual(
          columns.map((column) => {
            const type = ENGINE_TYPES.duckdb[column.type];
            return [column.name, DESCRIBED[type] ?? type];
          }),
        );
        if (format === 'parquet') {
          // The recipe's types are the files' own: DuckDB reading a file with no recipe agrees.
          const [first] = (await listKeys(destination.pathPrefix)).filter(
            (key) => key.endsWith('.parquet') && key.includes(dataset),
          );
          const own = await query(
            `DESCRIBE SELECT * FROM read_parquet('${join(folder, first as string)}', hive_partitioning = false)`,
          );
          expect(own.map((row) => [row.column_name, row.column_type])).toEqual(
            described.slice(0, columns.length).map((row) => [row.column_name, row.column_type]),
          );
        }
      }
    },
    180_000,
  );
});

describe('DDL of the other engines', () => {
  const parser = new nodeSqlParser.Parser();
  /** The column block of a generated DDL as a plain CREATE TABLE the dialect's parser takes. */
  function columnsOf(text: string, database: string): { name: string; type: string }[] {
    const open = text.indexOf('(');
    const close = text.indexOf('\n)');
    const body = text.slice(open + 1, close);
    const ast = parser.astify(`CREATE TABLE t (${body})`, { database }) as unknown as {
      create_definitions: {
        column: { column: string | { expr: { value: string } } };
        definition: {
          dataType: string;
          expr?: { value: { dataType: string }[] };
          definition?: { field_type: { dataType: string } }[];
        };
      }[];
    };
    return ast.create_definitions.map((entry) => {
      const column = entry.column.column;
      const inner =
        entry.definition.expr?.value[0]?.dataType ?? entry.definition.definition?.[0]?.field_type.dataType;
      return {
        name: typeof column === 'string' ? column : column.expr.value,
        type: inner !== undefined ? `${entry.definition.dataType}<${inner}>` : entry.definition.dataType,
      };
    });
  }

  it.each([
    ['athena', 'athena'],
    ['bigquery', 'bigquery'],
  ] as const)(
    '%s: parses to exactly the Parquet schema columns, every dataset of the catalogue, both layouts and formats',
    (engine, database) => {
      for (const layout of ['date', 'run_hour'] as const) {
        for (const format of ['parquet', 'jsonl'] as const) {
          for (const dataset of DATASETS) {
            const recipe = recipesFor({ dataset, layout, format, bucket: 'acme', pathPrefix: 'lake' }).find(
              (candidate) => candidate.engine === engine,
            );
            if (layout === 'run_hour' && dataset === 'subscribers') {
              expect(recipe).toBeUndefined();
              continue;
            }
            expect(columnsOf((recipe as { text: string }).text, database)).toEqual(
              PARQUET_COLUMNS[dataset].map((column) => ({
                name: column.name,
                type: ENGINE_TYPES[engine][column.type].replace(/\(\d+\)$/, ''),
              })),
            );
          }
        }
      }
    },
  );
});
