import { PassThrough, type Readable } from 'node:stream';
import * as zlib from 'node:zlib';
import {
  type Dataset,
  DAY_MS,
  PARQUET_COLUMNS,
  type ParquetColumn,
  type ParquetCompression,
} from '@sluice/core';
import { ByteWriter, type ColumnSource, ParquetWriter } from 'hyparquet-writer';
import type { SchemaElement } from 'hyparquet';
import type { EncoderStats } from './encoder.js';

/**
 * Rows per row group. A row group is parsed, encoded and handed to the upload before the next is read, so
 * memory holds one row group's rows and bytes whatever the window; 10,000 rows make five groups of a full
 * 50,000-row file, large enough for readers to skip by statistics and for compression to work.
 */
export const PARQUET_ROW_GROUP_ROWS = 10_000;
/** The zstd level of Parquet files: zstd's own default. */
export const PARQUET_ZSTD_LEVEL = 3;

/** A running encode, as {@link import('./encoder.js').JsonlGzipEncoding}: read `stream`; `done` has the totals. */
export interface ParquetEncoding {
  stream: Readable;
  readonly stats: EncoderStats;
  done: Promise<EncoderStats>;
}

type Compressor = (input: Uint8Array) => Uint8Array;

let wasmZstd: Promise<Compressor> | undefined;

/**
 * zstd for Parquet pages: node's own (`zlib.zstdCompressSync`, node 22.15 and later: the Lambda runtime);
 * on an older node (the local runtime and tests on node 20) the WebAssembly build of libzstd, which the
 * Lambda bundles leave out (it reads its .wasm beside its own module, which a bundle does not have).
 */
async function zstdCompressor(): Promise<Compressor> {
  const native = (zlib as { zstdCompressSync?: (input: Uint8Array, options?: object) => Buffer })
    .zstdCompressSync;
  if (native !== undefined) {
    const params = {
      [(zlib.constants as Record<string, number>).ZSTD_c_compressionLevel ?? 100]: PARQUET_ZSTD_LEVEL,
    };
    return (input) => native(input, { params });
  }
  wasmZstd ??= import('@bokuweb/zstd-wasm').then(async (zstd) => {
    await zstd.init();
    return (input: Uint8Array) => zstd.compress(input, PARQUET_ZSTD_LEVEL);
  });
  return wasmZstd;
}

const UTF8 = { converted_type: 'UTF8', logical_type: { type: 'STRING' } } as const;

/** The Parquet schema elements of one column (a list is three: the list, its repeated group, its element). */
function schemaElements(column: ParquetColumn): SchemaElement[] {
  const repetition_type = column.required ? 'REQUIRED' : 'OPTIONAL';
  const name = column.name;
  switch (column.type) {
    case 'string':
    case 'json':
      return [{ name, type: 'BYTE_ARRAY', repetition_type, ...UTF8 }];
    case 'timestamp_millis_utc':
      return [
        {
          name,
          type: 'INT64',
          repetition_type,
          converted_type: 'TIMESTAMP_MILLIS',
          logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MILLIS' },
        },
      ];
    case 'date':
      return [
        { name, type: 'INT32', repetition_type, converted_type: 'DATE', logical_type: { type: 'DATE' } },
      ];
    case 'int32':
      return [{ name, type: 'INT32', repetition_type }];
    case 'int64':
      return [{ name, type: 'INT64', repetition_type }];
    case 'double':
      return [{ name, type: 'DOUBLE', repetition_type }];
    case 'boolean':
      return [{ name, type: 'BOOLEAN', repetition_type }];
    case 'string_list':
      return [
        { name, repetition_type, num_children: 1, converted_type: 'LIST', logical_type: { type: 'LIST' } },
        { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
        { name: 'element', type: 'BYTE_ARRAY', repetition_type: 'REQUIRED', ...UTF8 },
      ];
  }
}

/** The file schema of a dataset: the root, then every column in {@link PARQUET_COLUMNS} order. */
export function parquetSchema(dataset: Dataset): SchemaElement[] {
  const columns = PARQUET_COLUMNS[dataset];
  return [{ name: 'root', num_children: columns.length }, ...columns.flatMap(schemaElements)];
}

/** A JSON value of a row as the column stores it. */
function columnValue(column: ParquetColumn, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  switch (column.type) {
    case 'string':
      return typeof value === 'string' ? value : JSON.stringify(value);
    case 'json':
      return JSON.stringify(value);
    case 'timestamp_millis_utc':
      return BigInt(Date.parse(value as string));
    case 'date':
      return Math.floor(Date.parse(value as string) / DAY_MS);
    case 'int32':
    case 'double':
      return Number(value);
    case 'int64':
      return BigInt(value as number);
    case 'string_list':
      return value as string[];
    case 'boolean':
      return value === true;
  }
}

/**
 * A ByteWriter that hands its bytes to `output` after each row group (`flush`) and at the end, and waits
 * for the reader (the upload) when `output` is full, so the encoder never runs ahead of the upload by more
 * than a row group.
 */
class StreamingByteWriter extends ByteWriter {
  constructor(
    private readonly output: PassThrough,
    private readonly stats: EncoderStats,
  ) {
    super(1 << 20);
  }

  flush(): Promise<void> | undefined {
    if (this.index === 0) return undefined;
    const chunk = Buffer.from(this.buffer.slice(0, this.index));
    this.index = 0;
    this.stats.compressedBytes += chunk.length;
    if (this.output.destroyed) throw new Error('encodeParquet: the output was closed');
    if (this.output.write(chunk)) return undefined;
    return new Promise<void>((resolve, reject) => {
      const onDrain = (): void => {
        this.output.off('close', onClose);
        resolve();
      };
      const onClose = (): void => {
        this.output.off('drain', onDrain);
        reject(new Error('encodeParquet: the output was closed'));
      };
      this.output.once('drain', onDrain);
      this.output.once('close', onClose);
    });
  }

  override finish(): void {
    void this.flush();
    this.output.end();
  }
}

/**
 * Encodes JSON lines of `dataset` as one Parquet file with the dataset's typed columns
 * ({@link PARQUET_COLUMNS}), `compression` on every page, in row groups of {@link PARQUET_ROW_GROUP_ROWS}.
 * Each row group is written to `stream` before the next lines are read. The bytes depend only on the lines,
 * so a retried file is byte-identical. Zero lines give a valid file of zero rows.
 *
 * @param lines serialized rows of `dataset` (`ROW_FIELDS` keys), without newlines
 */
export function encodeParquet(
  lines: AsyncIterable<string> | Iterable<string>,
  options: { dataset: Dataset; compression: ParquetCompression; rowGroupRows?: number },
): ParquetEncoding {
  const rowGroupRows = options.rowGroupRows ?? PARQUET_ROW_GROUP_ROWS;
  const columns = PARQUET_COLUMNS[options.dataset];
  const stats: EncoderStats = { lines: 0, uncompressedBytes: 0, compressedBytes: 0 };
  const output = new PassThrough({ highWaterMark: 1 << 20 });

  const writeGroup = async (writer: ParquetWriter, rows: Record<string, unknown>[]): Promise<void> => {
    const columnData: ColumnSource[] = columns.map((column) => ({
      name: column.name,
      data: rows.map((row) => columnValue(column, row[column.name])) as ColumnSource['data'],
    }));
    await writer.write({ columnData, rowGroupSize: rows.length });
  };

  const pump = async (): Promise<EncoderStats> => {
    const compressors = options.compression === 'zstd' ? { ZSTD: await zstdCompressor() } : undefined;
    const writer = new ParquetWriter({
      writer: new StreamingByteWriter(output, stats),
      schema: parquetSchema(options.dataset),
      codec: options.compression === 'zstd' ? 'ZSTD' : 'SNAPPY',
      ...(compressors !== undefined ? { compressors } : {}),
      createdBy: 'sluice',
    });
    let rows: Record<string, unknown>[] = [];
    for await (const line of lines as AsyncIterable<string>) {
      if (typeof line !== 'string') throw new TypeError('encodeParquet: every line must be a string');
      rows.push(JSON.parse(line) as Record<string, unknown>);
      stats.lines += 1;
      stats.uncompressedBytes += Buffer.byteLength(line) + 1;
      if (rows.length >= rowGroupRows) {
        const group = rows;
        rows = [];
        await writeGroup(writer, group);
      }
    }
    if (rows.length > 0) await writeGroup(writer, rows);
    await writer.finish();
    return { ...stats };
  };
  // Resolves once every byte is handed to `stream`; a failure destroys `stream` with the same error.
  const done = pump().catch((error: unknown) => {
    const failure = error instanceof Error ? error : new Error(String(error));
    if (!output.destroyed) output.destroy(failure);
    throw failure;
  });
  done.catch(() => undefined); // the stream carries the error too; callers may await either

  return { stream: output, stats, done };
}
