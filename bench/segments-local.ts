/**
 * Event log segments against today's per-row design, locally, in one run (`npm run bench:segments`, and the
 * `segments` part of `npm run bench`; skip with `BENCH_SEGMENT_LOCAL=0`): an in-memory DynamoDB Local, the same
 * generated email events written both ways in alternating rounds, then the whole range read back both ways.
 * - Ingest, in calls of a batching producer's 300 rows (the bus ingest's shape): per-row items (today: an
 *   item a row in its shard) and segments (`segmentPutRequests`), both through the writer's `batchWrite`; and
 *   the whole `EventLogWriter.ingestEvents` on segments (validation included, so it is the conservative one).
 * - Whole read, what an export reads (`EventLogReader.readWindow` over every row; encoding and upload are the
 *   same in both designs): the per-row workspace (no per-row marker: shards and segments queried) and the
 *   segments workspace (a marker: segments only).
 * - Lambda time: the ingest and read wall time a row, priced at the functions' memory. Wall time against
 *   DynamoDB Local on a shared machine is an indication of the ratio, not of DynamoDB's latency.
 */
import type { DynamoDBClient, WriteRequest } from '@aws-sdk/client-dynamodb';
import { Logger } from '@aws-lambda-powertools/logger';
import {
  batchWrite,
  createEventLogClient,
  EVENT_SHARDS,
  EventLogReader,
  EventLogWriter,
  eventPk,
  eventSk,
  generatedLine,
  generateEvents,
  hourStart,
  recordPerRowUntil,
  segmentPutRequests,
  shardOf,
} from '@sluice/eventlog';
import { createLocalTables, LOCAL_TABLE_NAMES, startDynamoDbLocal } from '@sluice/devstack';
// The archive bench's prices (the segments bench's main module awaits this one: importing it back would deadlock).
import { PRICES } from './archive.js';

const silent = new Logger({ serviceName: 'bench', logLevel: 'SILENT' });
const CALL_ROWS = 300;
const RETENTION_SECONDS = 35 * 86_400;
/** The ingest function's and the export writer's memory (infra/stateless-stack.ts). */
const INGEST_GB = 0.5;
const WRITER_GB = 1.769;

/** One path's rate. */
export interface LocalPathFigure {
  name: string;
  rows: number;
  ms: number;
  rowsPerSecond: number;
  /** Rows/s over today's (per-row) path of the same kind. */
  ratio: number;
  /** Lambda wall time priced per million rows at the function's memory. */
  lambdaPerMillion: number;
}

type Event = ReturnType<typeof generateEvents> extends Iterable<infer T> ? T : never;

/** The generated events of one round, cut into calls of {@link CALL_ROWS}, recorded over an hour before `now`. */
function roundCalls(count: number, seed: number, now: number): Event[][] {
  const calls: Event[][] = [];
  let call: Event[] = [];
  for (const event of generateEvents({
    count,
    seed,
    from: now - 3_600_000,
    to: now - 60_000,
    mix: { email_events: 1 },
  })) {
    call.push(event);
    if (call.length === CALL_ROWS) {
      calls.push(call);
      call = [];
    }
  }
  if (call.length > 0) calls.push(call);
  return calls;
}

const expiresAt = (recordedMs: number) => Math.floor(recordedMs / 1000) + RETENTION_SECONDS;

/** Today's items of a call: one a row, in its shard's partition. */
export function perRowRequests(workspaceId: string, call: readonly Event[]): WriteRequest[] {
  return call.map((event) => {
    const recordedMs = Date.parse(event.recorded_at as string);
    return {
      PutRequest: {
        Item: {
          PK: {
            S: eventPk(workspaceId, 'email_events', hourStart(recordedMs), shardOf(event.id, EVENT_SHARDS)),
          },
          SK: { S: eventSk(recordedMs, event.id) },
          line: { S: generatedLine(event) },
          expiresAt: { N: String(expiresAt(recordedMs)) },
        },
      },
    };
  });
}

/** Segment items of a call, as the writer builds them. */
function segmentRequests(workspaceId: string, call: readonly Event[], now: number): WriteRequest[] {
  const rows = call.map((event) => ({
    key: eventSk(Date.parse(event.recorded_at as string), event.id),
    line: generatedLine(event),
  }));
  return segmentPutRequests(workspaceId, 'email_events', rows, expiresAt, now);
}

/** Measures the paths (see the module documentation). */
export async function runSegmentLocalBench(options: {
  rows: number;
  rounds?: number;
  log: (line: string) => void;
}): Promise<LocalPathFigure[]> {
  const rounds = options.rounds ?? 4;
  const perRound = Math.ceil(options.rows / rounds);
  const server = await startDynamoDbLocal({ quickStart: false });
  const client: DynamoDBClient = createEventLogClient({
    endpoint: server.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    await createLocalTables(client);
    const table = LOCAL_TABLE_NAMES.events;
    const tables = { client, eventsTable: table, subscribersTable: LOCAL_TABLE_NAMES.subscribers };
    const writer = new EventLogWriter({ ...tables, logger: silent, explicitRecordedAt: 'unchecked' });
    const now = Date.now();
    const ws = { perRow: 'ws_bench_per_row', segments: 'ws_bench_segments', writer: 'ws_bench_writer' };
    type Path = { name: string; kind: 'ingest' | 'read'; run: (calls: Event[][]) => Promise<number> };
    const ingest: Path[] = [
      {
        name: 'ingest, per-row items (today)',
        kind: 'ingest',
        run: async (calls) => {
          for (const call of calls) await batchWrite(client, table, perRowRequests(ws.perRow, call));
          return calls.reduce((n, call) => n + call.length, 0);
        },
      },
      {
        name: 'ingest, segments (same batchWrite)',
        kind: 'ingest',
        run: async (calls) => {
          for (const call of calls) await batchWrite(client, table, segmentRequests(ws.segments, call, now));
          return calls.reduce((n, call) => n + call.length, 0);
        },
      },
      {
        name: 'ingest, EventLogWriter.ingestEvents (segments, validation included)',
        kind: 'ingest',
        run: async (calls) => {
          let accepted = 0;
          for (const call of calls)
            accepted += (await writer.ingestEvents(ws.writer, call as unknown as Record<string, unknown>[]))
              .accepted;
          return accepted;
        },
      },
    ];
    // As the writer does before its first write: readers of this workspace then skip the per-row shards.
    await recordPerRowUntil(client, table, ws.segments, now);
    // Warm the JIT of both sides before anything is timed.
    const warm = roundCalls(2_000, 1, now);
    for (const call of warm) await batchWrite(client, table, perRowRequests('ws_bench_warm', call));
    for (const call of warm) await batchWrite(client, table, segmentRequests('ws_bench_warm', call, now));

    const totals = new Map<string, { rows: number; ms: number; kind: Path['kind'] }>();
    const time = async (path: Path, calls: Event[][]) => {
      const started = performance.now();
      const rows = await path.run(calls);
      const ms = performance.now() - started;
      const total = totals.get(path.name) ?? { rows: 0, ms: 0, kind: path.kind };
      total.rows += rows;
      total.ms += ms;
      totals.set(path.name, total);
    };
    for (let round = 0; round < rounds; round++) {
      const calls = roundCalls(perRound, 100 + round, now);
      for (const path of round % 2 === 0 ? ingest : [...ingest].reverse()) await time(path, calls);
      options.log(`  ingest round ${round + 1} of ${rounds} done`);
    }
    const reader = new EventLogReader({ ...tables });
    const readAll = (workspaceId: string) => async () => {
      let rows = 0;
      for await (const page of reader.readWindow(workspaceId, 'email_events', now - 3_700_000, now))
        rows += page.lines.length;
      return rows;
    };
    const read: Path[] = [
      { name: 'whole read, per-row items (today)', kind: 'read', run: readAll(ws.perRow) },
      { name: 'whole read, segments', kind: 'read', run: readAll(ws.segments) },
    ];
    for (let round = 0; round < rounds; round++) {
      for (const path of round % 2 === 0 ? read : [...read].reverse()) await time(path, []);
    }
    const rate = (name: string) => {
      const t = totals.get(name)!;
      return t.rows / t.ms;
    };
    return [...totals.entries()].map(([name, t]) => {
      const reference = rate(t.kind === 'ingest' ? ingest[0]!.name : read[0]!.name);
      const gb = t.kind === 'ingest' ? INGEST_GB : WRITER_GB;
      return {
        name,
        rows: t.rows,
        ms: t.ms,
        rowsPerSecond: (t.rows / t.ms) * 1000,
        ratio: t.rows / t.ms / reference,
        lambdaPerMillion: (t.ms / 1000 / t.rows) * 1e6 * gb * PRICES.lambdaArmGbSecond,
      };
    });
  } finally {
    client.destroy();
    await server.stop();
  }
}

/** The totals of a design of the price table (bench/segments.ts) this part restates. */
interface PricedDesign {
  name: string;
  lambda: number;
  total: number;
}

/**
 * The batching producer's totals per million rows with Lambda's wall time measured here (ingest with its
 * validation, one export's read) in place of the table's compression CPU: today's per-row ingest pays the same
 * validation as segments (the writer's time less the segments' write alone).
 */
export function withLambdaWallTime(
  designs: readonly PricedDesign[],
  figures: readonly LocalPathFigure[],
  lambdaPerMillionInvocations: number,
): { today: number; segments: number } | undefined {
  const at = (prefix: string) => figures.find((f) => f.name.startsWith(prefix))?.lambdaPerMillion;
  const perRowWrite = at('ingest, per-row');
  const segmentWrite = at('ingest, segments');
  const writer = at('ingest, EventLogWriter');
  const perRowRead = at('whole read, per-row');
  const segmentRead = at('whole read, segments');
  const today = designs.find((d) => d.name.startsWith('today: an item a row, batching'));
  const segments = designs.find((d) => d.name === 'DynamoDB segments, batching producer');
  if (
    perRowWrite === undefined ||
    segmentWrite === undefined ||
    writer === undefined ||
    perRowRead === undefined ||
    segmentRead === undefined ||
    today === undefined ||
    segments === undefined
  )
    return undefined;
  const invocations = lambdaPerMillionInvocations / CALL_ROWS;
  const validation = writer - segmentWrite;
  return {
    today: today.total - today.lambda + invocations + perRowWrite + validation + perRowRead,
    segments: segments.total - segments.lambda + invocations + writer + segmentRead,
  };
}

export function printSegmentLocalBench(
  figures: readonly LocalPathFigure[],
  log: (line: string) => void,
  priced?: { designs: readonly PricedDesign[]; lambdaPerMillionInvocations: number },
): void {
  log(
    `  local, one in-memory DynamoDB Local, calls of ${CALL_ROWS} rows, alternating rounds; Lambda = wall time a row ` +
      `at ${INGEST_GB} GB (ingest) and ${WRITER_GB} GB (the export writer's read), $${PRICES.lambdaArmGbSecond}/GB-s`,
  );
  for (const f of figures) {
    log(
      `  ${f.name.padEnd(70)} ${Math.round(f.rowsPerSecond).toLocaleString('en-US').padStart(8)} rows/s ` +
        `${f.ratio.toFixed(2)}x today's   Lambda $${f.lambdaPerMillion.toFixed(4)} per million rows ` +
        `(${f.rows.toLocaleString('en-US')} rows, ${(f.ms / 1000).toFixed(1)} s)`,
    );
  }
  const totals = priced && withLambdaWallTime(priced.designs, figures, priced.lambdaPerMillionInvocations);
  if (totals !== undefined) {
    log(
      `  batching producer, per million rows with this Lambda wall time in place of compression CPU: today ` +
        `$${totals.today.toFixed(4)}, segments $${totals.segments.toFixed(4)}`,
    );
  }
}
