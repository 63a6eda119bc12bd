import { spawnSync } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { once } from 'node:events';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { MAX_LINES_PER_FILE } from '@sluice/core';
import { generatedLine, generateEvents } from '@sluice/eventlog';
import { encodeJsonlGzip, GZIP_LEVEL } from '@sluice/sinks';
import { printBenchResult, runBenchChild } from './child.js';

/**
 * Encode: the same generated rows to gzip JSON lines by Sluice's encoder and by DuckDB's COPY, in two cases,
 * each in its own child process reading the same input file:
 * - one core: the child runs under `taskset -c 0`, so node's gzip (which runs on a libuv worker thread)
 *   and DuckDB share one core, as on a 1,769 MB Lambda (one vCPU);
 * - cores free: no pinning. Gzip on the worker thread overlaps the main thread's batching, so this can
 *   measure up to twice what one core does: it is not the Lambda figure.
 * DuckDB runs with `SET threads = 1` in both; its default threads are reported beside, cores free only.
 * The one-core child also measures the encoder at other gzip levels (rows/s and output size), so the
 * level of {@link GZIP_LEVEL} is chosen by measurement.
 */

/** The gzip levels of the table (the encoder's own level is added when absent). */
export const BENCH_GZIP_LEVELS = [1, 3, 4, 6, 9];

/** One encoder's figures. */
export interface EncodeFigures {
  rows: number;
  ms: number;
  rowsPerSecond: number;
  /** Uncompressed JSON lines MB (10^6 bytes) per second. */
  mbPerSecond: number;
  outputBytes: number;
  /** CPU time of the whole process (every thread) ÷ wall time: above 1 means more than one core worked. */
  coresUsed: number;
  /**
   * Rows per second of CPU time (every thread): the cost, whatever else runs on the machine. On a shared
   * machine, where the child gets less than its core, this is closer to one whole core than rows/s.
   */
  rowsPerCpuSecond: number;
}

/** The encoder at one gzip level. */
export interface LevelFigures extends EncodeFigures {
  level: number;
  bytesPerRow: number;
  /** Output bytes ÷ output bytes at level 6. */
  sizeVsLevel6: number;
}

/** One case: Sluice's encoder beside DuckDB's COPY of the same rows, in one child process. */
export interface EncodeCase {
  name: 'one core' | 'cores free';
  /** The command prefix the child ran under, e.g. `taskset -c 0`; empty when not pinned. */
  pinnedWith: string;
  /** Cores the child process was allowed to run on (its CPU affinity). */
  cpusAllowed: number;
  sluice: EncodeFigures;
  /** DuckDB with `threads = 1`. */
  duckdb: EncodeFigures;
  /** DuckDB with its default threads (cores free only). */
  duckdbDefaultThreads?: EncodeFigures;
  /** sluice rows/s ÷ DuckDB (one thread) rows/s. */
  ratio: number;
  /** sluice rows per CPU-second ÷ DuckDB's (one thread). */
  cpuRatio: number;
  /** The encoder at each of {@link BENCH_GZIP_LEVELS} (the one-core case, or the only case). */
  levels?: LevelFigures[];
}

/** What {@link runEncodeBench} measured. */
export interface EncodeBenchResult {
  rows: number;
  inputBytes: number;
  averageRowBytes: number;
  /** The level every file is written with ({@link GZIP_LEVEL}). */
  encoderLevel: number;
  /** The one-core case first when it could be measured, then the cores-free case. */
  cases: EncodeCase[];
  /** Why there is no one-core case, when there is none. */
  notPinned?: string;
}

/** What a child is told to do (as JSON in `SLUICE_ENCODE_BENCH_CHILD`). */
interface ChildTask {
  name: EncodeCase['name'];
  pinnedWith: string;
  input: string;
  workDir: string;
  rows: number;
  inputBytes: number;
  levels: number[];
  duckdbDefaultThreads: boolean;
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

/** Reads a JSON lines file back as lines, from a Buffer (the file can be longer than a V8 string). */
async function readLines(path: string): Promise<string[]> {
  const bytes = await readFile(path);
  const lines: string[] = [];
  for (let start = 0; start < bytes.length; ) {
    const end = bytes.indexOf(0x0a, start);
    const stop = end === -1 ? bytes.length : end;
    lines.push(bytes.toString('utf8', start, stop));
    start = stop + 1;
  }
  return lines;
}

/** Runs `work`, timing it by the wall clock and by the CPU time of every thread of this process. */
async function measure(task: ChildTask, work: () => Promise<number>): Promise<EncodeFigures> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const outputBytes = await work();
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return {
    rows: task.rows,
    ms,
    rowsPerSecond: task.rows / (ms / 1000),
    mbPerSecond: task.inputBytes / 1e6 / (ms / 1000),
    outputBytes,
    coresUsed: (used.user + used.system) / 1000 / ms,
    rowsPerCpuSecond: task.rows / ((used.user + used.system) / 1e6),
  };
}

/** Sluice's encoder at `level`, cut in files of 50,000 lines as the writer does; output bytes counted. */
async function encodeAll(lines: string[], level: number): Promise<number> {
  let outputBytes = 0;
  for (let start = 0; start < lines.length; start += MAX_LINES_PER_FILE) {
    const encoding = encodeJsonlGzip(lines.slice(start, start + MAX_LINES_PER_FILE), { level });
    for await (const chunk of encoding.stream) outputBytes += (chunk as Buffer).length;
    await encoding.done;
  }
  return outputBytes;
}

/** The child: one case, printed as a `BENCH_RESULT` line. */
async function child(task: ChildTask): Promise<void> {
  const lines = await readLines(task.input);
  if (lines.length !== task.rows) throw new Error(`read ${lines.length} lines, expected ${task.rows}`);

  const sluice = await measure(task, () => encodeAll(lines, GZIP_LEVEL));
  const atLevel = new Map<number, EncodeFigures>([[GZIP_LEVEL, sluice]]);
  for (const level of task.levels) {
    if (!atLevel.has(level)) atLevel.set(level, await measure(task, () => encodeAll(lines, level)));
  }
  lines.length = 0;

  // DuckDB: COPY (SELECT * FROM read_json_auto(<the same lines>)) TO 'x.jsonl.gz' (FORMAT JSON, COMPRESSION GZIP)
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  const copy = async (threads: '1' | 'DEFAULT'): Promise<EncodeFigures> => {
    await connection.run(threads === 'DEFAULT' ? 'RESET threads' : `SET threads = ${threads}`);
    const output = join(task.workDir, `${task.name.replace(' ', '-')}-threads-${threads}.jsonl.gz`);
    const figures = await measure(task, async () => {
      await connection.run(
        `COPY (SELECT * FROM read_json_auto('${task.input}', format = 'newline_delimited')) TO '${output}' (FORMAT JSON, COMPRESSION GZIP)`,
      );
      return (await stat(output)).size;
    });
    await rm(output, { force: true });
    return figures;
  };
  const duckdb = await copy('1');
  const duckdbDefaultThreads = task.duckdbDefaultThreads ? await copy('DEFAULT') : undefined;
  connection.closeSync();

  const level6Bytes = atLevel.get(6)?.outputBytes;
  const levels =
    task.levels.length === 0
      ? undefined
      : [...atLevel.entries()]
          .sort(([a], [b]) => a - b)
          .map(([level, f]) => ({
            ...f,
            level,
            bytesPerRow: f.outputBytes / f.rows,
            sizeVsLevel6: level6Bytes === undefined ? Number.NaN : f.outputBytes / level6Bytes,
          }));
  const result: EncodeCase = {
    name: task.name,
    pinnedWith: task.pinnedWith,
    cpusAllowed: availableParallelism(),
    sluice,
    duckdb,
    ...(duckdbDefaultThreads === undefined ? {} : { duckdbDefaultThreads }),
    ratio: sluice.rowsPerSecond / duckdb.rowsPerSecond,
    cpuRatio: sluice.rowsPerCpuSecond / duckdb.rowsPerCpuSecond,
    ...(levels === undefined ? {} : { levels }),
  };
  printBenchResult(result);
}

/** `taskset -c 0` when taskset is on this machine and works here; otherwise why not. */
function oneCorePrefix(): { prefix: string[] } | { why: string } {
  const probe = spawnSync('taskset', ['-c', '0', 'true'], { stdio: 'ignore' });
  if (probe.error !== undefined) return { why: `taskset is not available (${probe.error.message})` };
  if (probe.status !== 0) return { why: `taskset -c 0 failed here (exit ${probe.status})` };
  return { prefix: ['taskset', '-c', '0'] };
}

function runChild(task: ChildTask, prefix: string[]): Promise<EncodeCase> {
  const node = [
    process.execPath,
    '--openssl-legacy-provider',
    '--import',
    'tsx',
    fileURLToPath(import.meta.url),
  ];
  const [command, ...args] = [...prefix, ...node] as [string, ...string[]];
  return runBenchChild<EncodeCase>(
    'encode bench child',
    command,
    args,
    { SLUICE_ENCODE_BENCH_CHILD: JSON.stringify(task) },
    16 * 1024 * 1024,
  );
}

/**
 * Generates `rows` email events, writes them once as a local .jsonl file, then measures the one-core case
 * (when `taskset` works here) and the cores-free case, each in a child process reading that file.
 */
export async function runEncodeBench(rows: number, log: (line: string) => void): Promise<EncodeBenchResult> {
  const lines = generateEmailLines(rows);
  const inputBytes = lines.reduce((sum, line) => sum + Buffer.byteLength(line) + 1, 0);
  log(
    `  generated ${rows.toLocaleString('en-US')} email events, ${(inputBytes / 1e6).toFixed(1)} MB of JSON lines; ` +
      `load average ${loadavg()[0]?.toFixed(2)} on ${availableParallelism()} cores`,
  );
  const workDir = await mkdtemp(join(tmpdir(), 'sluice-bench-'));
  try {
    const input = join(workDir, 'events.jsonl');
    await writeLines(input, lines);
    lines.length = 0;
    const levels = [...new Set([...BENCH_GZIP_LEVELS, GZIP_LEVEL])];
    const base = { input, workDir, rows, inputBytes };

    const oneCore = oneCorePrefix();
    const cases: EncodeCase[] = [];
    if ('prefix' in oneCore) {
      const pinnedWith = oneCore.prefix.join(' ');
      cases.push(
        await runChild(
          { ...base, name: 'one core', pinnedWith, levels, duckdbDefaultThreads: false },
          oneCore.prefix,
        ),
      );
    }
    cases.push(
      await runChild(
        {
          ...base,
          name: 'cores free',
          pinnedWith: '',
          levels: 'prefix' in oneCore ? [] : levels,
          duckdbDefaultThreads: true,
        },
        [],
      ),
    );
    return {
      rows,
      inputBytes,
      averageRowBytes: inputBytes / rows,
      encoderLevel: GZIP_LEVEL,
      cases,
      ...('why' in oneCore ? { notPinned: oneCore.why } : {}),
    };
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');

function figuresLine(name: string, f: EncodeFigures): string {
  return (
    `    ${name.padEnd(22)}${fmt(f.rowsPerSecond).padStart(9)} rows/s${fmt(f.rowsPerCpuSecond).padStart(9)} rows/CPU-s` +
    `${f.mbPerSecond.toFixed(1).padStart(7)} MB/s${fmt(f.outputBytes).padStart(13)} B out` +
    `${(f.ms / 1000).toFixed(2).padStart(7)} s${f.coresUsed.toFixed(2).padStart(6)} cores busy`
  );
}

/** Prints what {@link runEncodeBench} measured: each case with its ratio, then the table of gzip levels. */
export function printEncodeBench(result: EncodeBenchResult, log: (line: string) => void): void {
  log(
    `  average row ${result.averageRowBytes.toFixed(0)} B; files are written at gzip level ${result.encoderLevel}; ` +
      'rows/CPU-s counts the CPU time of every thread, so it holds when other work shares the cores',
  );
  if (result.notPinned !== undefined) {
    log(`  NOT pinned to one core: ${result.notPinned}. The figures below may be up to twice one core's.`);
  }
  for (const c of result.cases) {
    const how = c.pinnedWith === '' ? 'not pinned' : c.pinnedWith;
    log(`  ${c.name} (${how}, ${c.cpusAllowed} CPU${c.cpusAllowed === 1 ? '' : 's'} allowed)`);
    log(figuresLine(`Sluice encoder (gz ${result.encoderLevel})`, c.sluice));
    log(figuresLine('DuckDB COPY, 1 thread', c.duckdb));
    if (c.duckdbDefaultThreads !== undefined)
      log(figuresLine('DuckDB COPY, default', c.duckdbDefaultThreads));
    log(
      `    ratio Sluice / DuckDB (1 thread): ${c.ratio.toFixed(2)}x by rows/s, ${c.cpuRatio.toFixed(2)}x by rows/CPU-s ` +
        '(target ≥ 1.5x)',
    );
  }
  const measured = result.cases.find((c) => c.levels !== undefined);
  if (measured?.levels === undefined) return;
  log(`  gzip levels, Sluice encoder, ${measured.name} (* the level files are written with):`);
  log('    level     rows/s  rows/CPU-s      bytes out  bytes/row  size vs 6');
  for (const l of measured.levels) {
    log(
      `    ${String(l.level).padStart(5)}${l.level === result.encoderLevel ? '*' : ' '}${fmt(l.rowsPerSecond).padStart(10)}` +
        `${fmt(l.rowsPerCpuSecond).padStart(12)}${fmt(l.outputBytes).padStart(15)}${l.bytesPerRow.toFixed(1).padStart(11)}` +
        `${l.sizeVsLevel6.toFixed(3).padStart(11)}`,
    );
  }
}

if (
  process.env.SLUICE_ENCODE_BENCH_CHILD !== undefined &&
  process.argv[1] === fileURLToPath(import.meta.url)
) {
  child(JSON.parse(process.env.SLUICE_ENCODE_BENCH_CHILD) as ChildTask).catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
