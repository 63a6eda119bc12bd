import { createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { MAX_LINES_PER_FILE } from '@sluice/core';
import { generatedLine, generateEvents } from '@sluice/eventlog';
import { encodeJsonlGzip } from '@sluice/sinks';

/** One encoder's figures. */
export interface EncodeFigures {
  rows: number;
  ms: number;
  rowsPerSecond: number;
  /** Uncompressed JSON lines MB (10^6 bytes) per second. */
  mbPerSecond: number;
  outputBytes: number;
}

/** What {@link runEncodeBench} measured: Sluice's encoder and DuckDB's COPY on the same rows. */
export interface EncodeBenchResult {
  rows: number;
  inputBytes: number;
  averageRowBytes: number;
  sluice: EncodeFigures;
  duckdb: EncodeFigures;
  /** sluice rows/s ÷ DuckDB rows/s. */
  ratio: number;
}

/** Generates `rows` email events as stored lines (about 600 bytes each). */
export function generateEmailLines(rows: number, seed = 7): string[] {
  const to = Date.parse('2026-09-30T00:00:00.000Z');
  const lines: string[] = [];
  for (const event of generateEvents({
    count: rows,
    seed,
    from: to - 86_400_000,
    to,
    mix: { email_events: 1 },
  })) {
    lines.push(generatedLine(event));
  }
  return lines;
}

/** Writes lines to a file in chunks (a 1,000,000-row file is longer than the longest string V8 allows). */
async function writeLines(path: string, lines: string[]): Promise<void> {
  const out = createWriteStream(path);
  for (let start = 0; start < lines.length; start += 10_000) {
    if (!out.write(`${lines.slice(start, start + 10_000).join('\n')}\n`)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

function figures(rows: number, inputBytes: number, ms: number, outputBytes: number): EncodeFigures {
  return {
    rows,
    ms,
    rowsPerSecond: rows / (ms / 1000),
    mbPerSecond: inputBytes / 1e6 / (ms / 1000),
    outputBytes,
  };
}

/**
 * Encode: the same generated rows to gzip JSON lines, twice in one process.
 * - Sluice: `encodeJsonlGzip` (node:zlib level 6 fed in batches of 1,000 lines), cut in files of 50,000
 *   lines as the writer does, output bytes counted (no disk).
 * - DuckDB: `COPY (SELECT * FROM read_json_auto(<the same lines as a local .jsonl>)) TO 'x.jsonl.gz'
 *   (FORMAT JSON, COMPRESSION GZIP)`, with `threads = 1` to compare one core with one core (also run with
 *   DuckDB's default threads, reported beside).
 */
export async function runEncodeBench(rows: number, log: (line: string) => void): Promise<EncodeBenchResult> {
  const lines = generateEmailLines(rows);
  const inputBytes = lines.reduce((sum, line) => sum + Buffer.byteLength(line) + 1, 0);
  log(
    `  generated ${rows.toLocaleString('en-US')} email events, ${(inputBytes / 1e6).toFixed(1)} MB of JSON lines`,
  );

  // Sluice
  const started = performance.now();
  let outputBytes = 0;
  for (let start = 0; start < lines.length; start += MAX_LINES_PER_FILE) {
    const encoding = encodeJsonlGzip(lines.slice(start, start + MAX_LINES_PER_FILE));
    for await (const chunk of encoding.stream) outputBytes += (chunk as Buffer).length;
    await encoding.done;
  }
  const sluice = figures(rows, inputBytes, performance.now() - started, outputBytes);

  // DuckDB
  const dir = await mkdtemp(join(tmpdir(), 'sluice-bench-'));
  try {
    const input = join(dir, 'events.jsonl');
    await writeLines(input, lines);
    lines.length = 0;
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    const copy = async (threads: string, output: string): Promise<EncodeFigures> => {
      await connection.run(threads === 'DEFAULT' ? 'RESET threads' : `SET threads = ${threads}`);
      const t0 = performance.now();
      await connection.run(
        `COPY (SELECT * FROM read_json_auto('${input}', format = 'newline_delimited')) TO '${output}' (FORMAT JSON, COMPRESSION GZIP)`,
      );
      const ms = performance.now() - t0;
      return figures(rows, inputBytes, ms, (await stat(output)).size);
    };
    const duckdb = await copy('1', join(dir, 'one-thread.jsonl.gz'));
    const defaultThreads = await copy('DEFAULT', join(dir, 'default-threads.jsonl.gz')).catch(
      () => undefined,
    );
    if (defaultThreads !== undefined) {
      log(
        `  (DuckDB with its default threads: ${Math.round(defaultThreads.rowsPerSecond).toLocaleString('en-US')} rows/s)`,
      );
    }
    connection.closeSync();
    return {
      rows,
      inputBytes,
      averageRowBytes: inputBytes / rows,
      sluice,
      duckdb,
      ratio: sluice.rowsPerSecond / duckdb.rowsPerSecond,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
