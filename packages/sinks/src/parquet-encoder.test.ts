import { type Dataset, PARQUET_COLUMNS, serializeRow, withSnapshotDate } from '@sluice/core';
import { generatedLine, generateEvents, generateSubscribers } from '@sluice/eventlog';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonLineAsRead, openParquetReader, type ParquetReader } from '../../../test/helpers/parquet.js';
import { encodeParquet, PARQUET_ROW_GROUP_ROWS } from './parquet-encoder.js';

const FROM = Date.UTC(2026, 11, 1);
const TO = Date.UTC(2026, 11, 1, 1);

/** Generated lines of every dataset: events of all three kinds, and snapshot rows of subscribers. */
function linesByDataset(): Record<Dataset, string[]> {
  const lines: Record<Dataset, string[]> = {
    email_events: [],
    sms_events: [],
    custom_events: [],
    subscribers: [],
    message_events: [],
    project_summary: [],
    opt_out_events: [],
    click_events: [],
  };
  for (const event of generateEvents({ count: 24_000, from: FROM, to: TO, workspaceId: 'ws_parquet' })) {
    lines[event.dataset].push(generatedLine(event));
  }
  for (const subscriber of generateSubscribers({ count: 3_000, workspaceId: 'ws_parquet' })) {
    lines.subscribers.push(withSnapshotDate(serializeRow('subscribers', subscriber), '2026-12-01'));
  }
  return lines;
}

async function encode(lines: Iterable<string> | AsyncIterable<string>, dataset: Dataset, zstd = false) {
  const encoding = encodeParquet(lines, { dataset, compression: zstd ? 'zstd' : 'snappy' });
  const chunks: Buffer[] = [];
  for await (const chunk of encoding.stream) chunks.push(chunk as Buffer);
  return { bytes: Buffer.concat(chunks), stats: await encoding.done, chunks: chunks.length };
}

let reader: ParquetReader;
let lines: Record<Dataset, string[]>;

beforeAll(async () => {
  reader = await openParquetReader();
  lines = linesByDataset();
});
afterAll(async () => reader.close());

describe('encodeParquet, read back by DuckDB', () => {
  it('gives every dataset its typed columns, in the order of the JSON lines', async () => {
    // Prepare
    const types: Partial<Record<Dataset, Record<string, string>>> = {
      email_events: { occurred_at: 'TIMESTAMP WITH TIME ZONE', schema_version: 'INTEGER' },
      sms_events: { segments: 'BIGINT', credits: 'DOUBLE', recorded_at: 'TIMESTAMP WITH TIME ZONE' },
      custom_events: { properties: 'VARCHAR', schema_version: 'INTEGER' },
      subscribers: {
        snapshot_date: 'DATE',
        tags: 'VARCHAR[]',
        custom_attributes: 'VARCHAR',
        created_at: 'TIMESTAMP WITH TIME ZONE',
      },
    };
    for (const dataset of Object.keys(types) as Dataset[]) {
      // Act
      const path = await reader.put(`${dataset}.parquet`, (await encode(lines[dataset], dataset)).bytes);
      const columns = await reader.describe(path);
      // Assess: the JSON lines' keys, in order, and the types
      expect(columns.map((column) => column.name)).toEqual(
        Object.keys(JSON.parse(lines[dataset][0] as string)),
      );
      for (const [name, type] of Object.entries(types[dataset] ?? {})) {
        expect(columns.find((column) => column.name === name)?.type, `${dataset}.${name}`).toBe(type);
      }
      expect(columns.filter((column) => column.type === 'VARCHAR').map((column) => column.name)).toEqual(
        PARQUET_COLUMNS[dataset]
          .filter((column) => column.type === 'string' || column.type === 'json')
          .map((column) => column.name),
      );
    }
  });

  it.each(['email_events', 'sms_events', 'custom_events', 'subscribers'] as const)(
    'holds exactly the rows of the JSON lines, in order (%s)',
    async (dataset) => {
      // Act
      const { bytes, stats } = await encode(lines[dataset], dataset);
      const rows = await reader.rows(await reader.put(`rows-${dataset}.parquet`, bytes), dataset);
      // Assess
      expect(lines[dataset].length).toBeGreaterThan(500);
      expect(stats.lines).toBe(lines[dataset].length);
      expect(stats.compressedBytes).toBe(bytes.length);
      expect(rows).toEqual(lines[dataset].map((line) => jsonLineAsRead(line, dataset)));
    },
  );

  it('counts by type and compares timestamps as instants in UTC', async () => {
    // Prepare
    const email = lines.email_events;
    const path = await reader.put('email.parquet', (await encode(email, 'email_events', true)).bytes);
    const cutoff = new Date(FROM + 30 * 60_000).toISOString();
    const expected = new Map<string, number>();
    for (const line of email) {
      const row = JSON.parse(line) as { event_type: string };
      expected.set(row.event_type, (expected.get(row.event_type) ?? 0) + 1);
    }
    // Act
    const counts = await reader.query(
      `SELECT event_type, count(*)::INTEGER AS n FROM read_parquet('${path}') GROUP BY event_type`,
    );
    const [late] = await reader.query(
      `SELECT count(*)::INTEGER AS n FROM read_parquet('${path}') WHERE recorded_at > TIMESTAMPTZ '${cutoff}'`,
    );
    // Assess
    expect(new Map(counts.map((row) => [row.event_type as string, row.n as number]))).toEqual(expected);
    expect(late?.n).toBe(
      email.filter((line) => (JSON.parse(line) as { recorded_at: string }).recorded_at > cutoff).length,
    );
    expect(late?.n).toBeGreaterThan(0);
  });

  it('compresses with snappy or zstd, in row groups of 10,000 rows handed out one at a time', async () => {
    // Prepare: 25,000 rows from an async source read in pages of 1,000 (as the event log's Query pages), which
    // notes how many bytes were out before its last group
    const email = lines.email_events;
    for (const zstd of [false, true]) {
      let received = 0;
      let receivedBeforeLastGroup = -1;
      async function* source() {
        for (let index = 0; index < 25_000; index++) {
          if (index % 1_000 === 0) await new Promise((resolve) => setImmediate(resolve));
          if (index === 2 * PARQUET_ROW_GROUP_ROWS) receivedBeforeLastGroup = received;
          yield email[index % email.length] as string;
        }
      }
      // Act
      const encoding = encodeParquet(source(), {
        dataset: 'email_events',
        compression: zstd ? 'zstd' : 'snappy',
      });
      const chunks: Buffer[] = [];
      for await (const chunk of encoding.stream) {
        chunks.push(chunk as Buffer);
        received += (chunk as Buffer).length;
      }
      const path = await reader.put(`groups-${zstd}.parquet`, Buffer.concat(chunks));
      const meta = await reader.query(
        `SELECT row_group_id, row_group_num_rows::INTEGER AS n, compression FROM parquet_metadata('${path}') WHERE column_id = 0 ORDER BY row_group_id`,
      );
      // Assess: two row groups were out before the source gave the rows of the third
      expect(meta.map((row) => row.n)).toEqual([PARQUET_ROW_GROUP_ROWS, PARQUET_ROW_GROUP_ROWS, 5_000]);
      expect(new Set(meta.map((row) => row.compression))).toEqual(new Set([zstd ? 'ZSTD' : 'SNAPPY']));
      expect(receivedBeforeLastGroup).toBeGreaterThan(0);
      expect(receivedBeforeLastGroup).toBeLessThan(received);
    }
  });

  it('writes the same bytes for the same lines, and a valid file of zero rows', async () => {
    // Act
    const first = await encode(lines.custom_events, 'custom_events', true);
    const again = await encode(lines.custom_events, 'custom_events', true);
    const empty = await encode([], 'subscribers');
    // Assess
    expect(again.bytes.equals(first.bytes)).toBe(true);
    const [count] = await reader.query(
      `SELECT count(*)::INTEGER AS n FROM read_parquet('${await reader.put('empty.parquet', empty.bytes)}')`,
    );
    expect(count?.n).toBe(0);
  });

  it('fails with the source error, and stops the stream', async () => {
    // Prepare
    async function* failing() {
      yield lines.email_events[0] as string;
      throw new Error('event log read failed');
    }
    // Act
    const encoding = encodeParquet(failing(), { dataset: 'email_events', compression: 'snappy' });
    const streamError = new Promise((resolve) => encoding.stream.once('error', resolve));
    // Assess
    await expect(encoding.done).rejects.toThrow('event log read failed');
    expect(await streamError).toMatchObject({ message: 'event log read failed' });
    expect(encoding.stream.destroyed).toBe(true);
  });
});
