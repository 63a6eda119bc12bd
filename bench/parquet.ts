import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { DuckDBInstance } from '@duckdb/node-api';
import { ENGINE_TYPES, MAX_LINES_PER_FILE, type ParquetCompression, PARQUET_COLUMNS } from '@sluice/core';
import { encodeJsonlGzip, encodeParquet } from '@sluice/sinks';
import { generateEmailLines } from './encode.js';

/**
 * Parquet: the same generated email events encoded, in this process, one after the other, by
 * - Sluice's Parquet encoder (hyparquet-writer, snappy and zstd), in 50,000-row files as the writer cuts them;
 * - Sluice's JSON lines encoder (gzip 6), the same files;
 * - DuckDB's own Parquet `COPY` (one thread) of the same rows with the same column types: from a table
 *   already in memory (encoding alone), and from the JSON lines file (parsing included, as Sluice's does).
 * Each is timed by the wall clock and by this process's CPU time; the ratio is Sluice's rows/s ÷ DuckDB's.
 * Memory: the peak of heap and array buffers over the baseline while encoding one 50,000-row file, and while
 * encoding every file in turn (a window of `rows`), with a full garbage collection before each file so that
 * only what is still alive can add up: flat when they are about equal.
 */

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/** One encoder's figures. */
export interface ParquetFigures {
  name: string;
  rows: number;
  ms: number;
  rowsPerSecond: number;
  rowsPerCpuSecond: number;
  outputBytes: number;
}

/** What {@link runParquetBench} measured. */
export interface ParquetBenchResult {
  rows: number;
  inputBytes: number;
  figures: ParquetFigures[];
  /** Peak heap + array buffers above the baseline, MB: one file, and a whole window of files. */
  peakMbOneFile: number;
  peakMbWindow: number;
}

async function measure(name: string, rows: number, work: () => Promise<number>): Promise<ParquetFigures> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const outputBytes = await work();
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return {
    name,
    rows,
    ms,
    rowsPerSecond: rows / (ms / 1000),
    rowsPerCpuSecond: rows / ((used.user + used.system) / 1e6),
    outputBytes,
  };
}

/** Encodes `lines` in 50,000-row files with `encode`, reading each stream to its end; returns the bytes. */
async function inFiles(
  lines: string[],
  encode: (file: string[]) => { stream: NodeJS.ReadableStream; done: Promise<unknown> },
  beforeEachFile?: () => void,
): Promise<number> {
  let bytes = 0;
  for (let start = 0; start < lines.length; start += MAX_LINES_PER_FILE) {
    beforeEachFile?.();
    const encoding = encode(lines.slice(start, start + MAX_LINES_PER_FILE));
    for await (const chunk of encoding.stream) bytes += (chunk as Buffer).length;
    await encoding.done;
  }
  return bytes;
}

const parquet = (compression: ParquetCompression) => (file: string[]) =>
  encodeParquet(file, { dataset: 'email_events', compression });

/** Peak MB of heap + array buffers above the start while `work` runs (sampled every 5 ms). */
async function peakMb(work: () => Promise<unknown>): Promise<number> {
  collectGarbage();
  const used = () => {
    const memory = process.memoryUsage();
    return memory.heapUsed + memory.arrayBuffers;
  };
  const base = used();
  let peak = base;
  const timer = setInterval(() => {
    peak = Math.max(peak, used());
  }, 5);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  peak = Math.max(peak, used());
  return (peak - base) / 1e6;
}

/** The DuckDB column types of the Parquet schema, for `read_json(columns = …)`. */
function duckdbColumns(): string {
  return `{${PARQUET_COLUMNS.email_events.map((column) => `'${column.name}': '${ENGINE_TYPES.duckdb[column.type]}'`).join(', ')}}`;
}

export async function runParquetBench(rows: number): Promise<ParquetBenchResult> {
  const lines = generateEmailLines(rows);
  const dir = await mkdtemp(join(tmpdir(), 'sluice-bench-parquet-'));
  const input = join(dir, 'input.jsonl');
  try {
    const { writeFile } = await import('node:fs/promises');
    await writeFile(input, `${lines.join('\n')}\n`);
    const inputBytes = (await stat(input)).size;

    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    await connection.run('SET threads = 1');
    const read = `read_json('${input}', format = 'newline_delimited', columns = ${duckdbColumns()})`;
    await connection.run(`CREATE TABLE rows AS SELECT * FROM ${read}`);
    const copy = (from: string, compression: ParquetCompression) => async () => {
      const output = join(dir, `duckdb-${compression}.parquet`);
      await connection.run(
        `COPY ${from} TO '${output}' (FORMAT parquet, COMPRESSION ${compression}, ROW_GROUP_SIZE 10000)`,
      );
      const size = (await stat(output)).size;
      await rm(output, { force: true });
      return size;
    };

    // A first pass of each warms the code paths; the second is measured.
    const figures: ParquetFigures[] = [];
    const cases: [string, () => Promise<number>][] = [
      ['Sluice Parquet snappy (hyparquet-writer)', () => inFiles(lines, parquet('snappy'))],
      ['Sluice Parquet zstd (hyparquet-writer)', () => inFiles(lines, parquet('zstd'))],
      ['Sluice JSON lines gzip 6', () => inFiles(lines, (file) => encodeJsonlGzip(file))],
      ['DuckDB COPY parquet snappy, from a table', copy('rows', 'snappy')],
      ['DuckDB COPY parquet zstd, from a table', copy('rows', 'zstd')],
      ['DuckDB COPY parquet snappy, from JSON lines', copy(`(SELECT * FROM ${read})`, 'snappy')],
      ['DuckDB COPY parquet zstd, from JSON lines', copy(`(SELECT * FROM ${read})`, 'zstd')],
    ];
    for (const [, work] of cases) await work();
    for (const [name, work] of cases) figures.push(await measure(name, rows, work));
    connection.closeSync();
    instance.closeSync();

    const oneFile = lines.slice(0, MAX_LINES_PER_FILE);
    const peakMbOneFile = await peakMb(() => inFiles(oneFile, parquet('snappy'), collectGarbage));
    const peakMbWindow = await peakMb(() => inFiles(lines, parquet('snappy'), collectGarbage));
    return { rows, inputBytes, figures, peakMbOneFile, peakMbWindow };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export function printParquetBench(result: ParquetBenchResult, log: (line: string) => void): void {
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  const reference = (compression: string) =>
    result.figures.find((f) => f.name === `DuckDB COPY parquet ${compression}, from JSON lines`);
  log(
    `  ${fmt(result.rows)} email events, ${(result.inputBytes / result.rows).toFixed(0)} B a JSON line, ` +
      '50,000-row files, DuckDB with threads = 1',
  );
  for (const f of result.figures) {
    const compression = f.name.includes('zstd') ? 'zstd' : 'snappy';
    const duckdb = reference(compression);
    const ratio =
      f.name.startsWith('Sluice Parquet') && duckdb
        ? `  ${(f.rowsPerSecond / duckdb.rowsPerSecond).toFixed(2)}x DuckDB from JSON lines`
        : '';
    log(
      `  ${f.name.padEnd(46)} ${fmt(f.rowsPerSecond).padStart(9)} rows/s  ${fmt(f.rowsPerCpuSecond).padStart(9)} rows/CPU-s  ` +
        `${(f.outputBytes / f.rows).toFixed(1).padStart(6)} B/row${ratio}`,
    );
  }
  const jsonl = result.figures.find((f) => f.name.startsWith('Sluice JSON lines'));
  const snappy = result.figures.find((f) => f.name.startsWith('Sluice Parquet snappy'));
  if (jsonl && snappy) {
    log(
      `  Parquet snappy ÷ JSON lines encoder: ${(snappy.rowsPerSecond / jsonl.rowsPerSecond).toFixed(2)}x rows/s`,
    );
  }
  log(
    `  peak heap + buffers while encoding Parquet: one 50,000-row file ${result.peakMbOneFile.toFixed(0)} MB, ` +
      `the whole window of ${fmt(result.rows)} rows ${result.peakMbWindow.toFixed(0)} MB`,
  );
}
