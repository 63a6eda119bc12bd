import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { type Dataset, PARQUET_COLUMNS, type ParquetColumn } from '@sluice/core';

/**
 * Reads Parquet files with DuckDB, the way a customer's warehouse would: their column types (`DESCRIBE`),
 * and their rows as plain values comparable with the JSON lines of the same rows ({@link jsonLineAsRead}).
 */

/** A DuckDB session on a temporary folder where Parquet bytes are put to be read. */
export interface ParquetReader {
  /** Writes `bytes` as a file and returns its path. */
  put(name: string, bytes: Uint8Array): Promise<string>;
  /** `DESCRIBE`: column name and DuckDB type, in file order. */
  describe(path: string): Promise<{ name: string; type: string }[]>;
  /** Every row of the files, in file order, each column as {@link jsonLineAsRead} gives it. */
  rows(paths: string | string[], dataset: Dataset): Promise<Record<string, unknown>[]>;
  /** The rows of a query (values as DuckDB's JSON conversion gives them). */
  query(sql: string): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}

export async function openParquetReader(): Promise<ParquetReader> {
  const folder = await mkdtemp(join(tmpdir(), 'sluice-parquet-'));
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  const query = async (sql: string) =>
    (await connection.runAndReadAll(sql)).getRowObjectsJson() as Record<string, unknown>[];
  const list = (paths: string | string[]) =>
    `[${(Array.isArray(paths) ? paths : [paths]).map((path) => `'${path}'`).join(', ')}]`;
  return {
    async put(name, bytes) {
      const path = join(folder, name.replace(/[^\w.-]/g, '_'));
      await writeFile(path, bytes);
      return path;
    },
    async describe(path) {
      const rows = await query(`DESCRIBE SELECT * FROM read_parquet('${path}')`);
      return rows.map((row) => ({ name: String(row.column_name), type: String(row.column_type) }));
    },
    async rows(paths, dataset) {
      const select = PARQUET_COLUMNS[dataset].map((column) => `${readAs(column)} AS "${column.name}"`);
      const rows = await query(`SELECT ${select.join(', ')} FROM read_parquet(${list(paths)})`);
      return rows.map((row) =>
        Object.fromEntries(
          PARQUET_COLUMNS[dataset].map((column) => {
            const value = row[column.name];
            return [
              column.name,
              column.type === 'json' && typeof value === 'string' ? JSON.parse(value) : value,
            ];
          }),
        ),
      );
    },
    query,
    async close() {
      connection.closeSync();
      instance.closeSync();
      await rm(folder, { recursive: true, force: true });
    },
  };
}

/** The SQL that reads a column as a value {@link jsonLineAsRead} gives for the same JSON field. */
function readAs(column: ParquetColumn): string {
  const name = `"${column.name}"`;
  switch (column.type) {
    case 'timestamp_millis_utc':
      return `epoch_ms(${name})::DOUBLE`;
    case 'date':
      return `strftime(${name}, '%Y-%m-%d')`;
    case 'int32':
    case 'int64':
    case 'double':
      return `${name}::DOUBLE`;
    default:
      return name;
  }
}

/** A JSON line as {@link ParquetReader.rows} reads the same row from Parquet: timestamps as epoch ms. */
export function jsonLineAsRead(line: string, dataset: Dataset): Record<string, unknown> {
  const row = JSON.parse(line) as Record<string, unknown>;
  return Object.fromEntries(
    PARQUET_COLUMNS[dataset].map((column) => {
      const value = row[column.name] ?? null;
      return [
        column.name,
        column.type === 'timestamp_millis_utc' && typeof value === 'string' ? Date.parse(value) : value,
      ];
    }),
  );
}
