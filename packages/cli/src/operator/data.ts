/**
 * The data commands of the `npm run sluice` CLI, for platform teams and tests:
 *
 * - `events ingest --workspace <id> --file <f.jsonl> [--json]`: each line `{"dataset":"email_events", ...row}`,
 *   optionally with `recorded_at`. A `recorded_at` at or behind the position an export of the workspace has
 *   reached for that dataset (committed or planned, over all its destinations) is refused with its reason, since
 *   the row would never be exported; counted in `refusedBehindExport` and the `EventsRefusedBehindExport` metric
 *   (an EMF line on stderr);
 * - `subscribers upsert --workspace <id> --file <f.jsonl> [--json]`: each line a subscriber row;
 * - `subscribers delete --workspace <id> --ids <a,b,...> [--json]`;
 * - `events redrive [--queue-url <url>] [--max <n>] [--json]`: writes the bus events waiting in the ingest
 *   dead-letter queue (`IngestDeadLetterQueueUrl` output, or `SLUICE_INGEST_DLQ_URL`) into the event log, the
 *   ingest function's way, and deletes each once written. Fails (exit 1) when a message stays in the queue.
 *   The rows of people (or workspaces) erased after a message was sent are left out (the erasure log);
 * - `events rejected list [--workspace <id>] [--json]`: the rows and envelopes ingestion refused (kept 14 days in
 *   the control table), with their reasons, oldest sent first; `--json` prints one rejection a line;
 * - `events rejected redrive [--workspace <id> [--id <id>]] [--json]`: ingests them again the ingest function's
 *   way (after a fix: a producer's IAM, Sluice's rules); what is refused again stays, with its new reasons, and
 *   the command fails (exit 1);
 * - `seed --workspace <id> --events <n> [--datasets <a,b>] [--subscribers <n>] [--since <iso>] [--seed <n>]
 *   [--json]`: generates realistic data and ingests it. Without `--datasets`, `--events` is the total of the
 *   first product's three event datasets (mixed as a sending program's); with it, `--events` rows (messages,
 *   clicks, opt-outs, project completions…) per dataset named, of any of the eight (`subscribers`: that many
 *   subscribers unless `--subscribers` says otherwise). Without `--since` the events are recorded now, as they are written (their
 *   `occurred_at` spread over the hour before), so a running export picks them up at its next run. With
 *   `--since` (an ISO time, or a duration back from now: `30m`, `1h`, `2d`) they are recorded spread from that
 *   time to now, so an export created afterwards with an earlier `startFrom` writes most of them at its first
 *   run; those at or behind an export's position are refused and counted (`refusedBehindExport`), as for
 *   `events ingest`.
 *
 * A bad line (not JSON, or refused by the ingest rules) is reported with its line number and reason; the other
 * lines are still written. The command then fails (exit code 1) after printing its counts, so a script notices.
 * Blank lines are skipped.
 *
 * `seed` and `events ingest` show their progress on stderr (`./progress.ts`): a bar with rows/s on a terminal,
 * a plain line every few seconds otherwise. stdout carries only the result, one JSON line with `--json`.
 * They keep {@link CALLS_IN_FLIGHT} writer calls of {@link LINES_PER_CALL} lines going at once, so the next
 * lines are parsed and validated while the last ones are written.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { ArchiveCursorStore, ControlExportPositions, ErasureLogStore } from '@sluice/control';
import {
  type DeadLetterQueue,
  DynamoRejectedEvents,
  EventLogWriter,
  redriveRejected,
  generateDatasetRows,
  generateEvents,
  type RedriveSummary,
  redriveDeadLetters,
  SqsDeadLetterQueue,
  generateSubscribers,
  type CurrentRowCounts,
  emptyCurrentRowCounts,
  type IngestResult,
  powertoolsIngestMetrics,
  type SubscriberWriteResult,
} from '@sluice/eventlog';
import { loadRuntimeConfig, type RuntimeConfig } from '@sluice/local/runtime-config';
import { Command } from 'commander';
import { UsageError } from '../context.js';
import { commandGroup } from './command.js';
import { operatorTables } from './tables.js';
import { createProgress, type ProgressStream } from './progress.js';
import {
  createLogger,
  DATASETS,
  type Dataset,
  type ErasureLog,
  isDataset,
  isSecondProductDataset,
} from '@sluice/core';

/** Lines sent to the writer per call. */
const LINES_PER_CALL = 1_000;
/** Writer calls running at once (chosen by `npm run bench`, docs/performance.md "Local ingest"). */
export const CALLS_IN_FLIGHT = 2;

/** What the data commands need, injectable for tests. */
export interface DataCommandDeps {
  /** @default an `EventLogWriter` on the environment the CLI set (created when a command runs) */
  writer?: () => Pick<EventLogWriter, 'ingestEvents' | 'upsertSubscribers' | 'deleteSubscribers'>;
  /** @default a line on stdout */
  out?: (line: string) => void;
  /** @default a line on stderr */
  err?: (line: string) => void;
  /** @default Date.now */
  now?: () => number;
  /** Where progress goes. @default process.stderr */
  progress?: ProgressStream;
  /** The dead-letter queue at a URL. @default SQS */
  deadLetterQueue?: (queueUrl: string) => DeadLetterQueue;
  /** The Sluice to operate on. @default {@link loadRuntimeConfig} when a command runs */
  config?: () => RuntimeConfig;
  /** Rejected events. @default the control table of the environment */
  rejected?: () => DynamoRejectedEvents;
  /** The erasure log `events redrive` and `events rejected redrive` consult. @default the control table's (`ErasureLogStore`) */
  erasures?: () => ErasureLog;
}

/** A refused line of an input file. */
export interface RefusedLine {
  line: number;
  reason: string;
}

/** What `events ingest` did (its `--json` output). */
export interface EventsIngestSummary {
  lines: number;
  accepted: number;
  duplicates: number;
  dropped: IngestResult['dropped'];
  invalid: RefusedLine[];
  /** Of `invalid`: lines whose `recorded_at` is at or behind an export's position. */
  refusedBehindExport: number;
  /**
   * With lines of `message_events` or `project_summary`: what their rules did (docs/internals.md, "Current-row
   * datasets"; `emitted` and `kept` are in `accepted`, the others are neither written nor refused).
   */
  currentRows?: CurrentRowCounts;
}

/** What `subscribers upsert` did (its `--json` output). */
export interface SubscribersUpsertSummary {
  lines: number;
  accepted: number;
  invalid: RefusedLine[];
}

/** A chunk of a JSON-lines file: parsed values with their line numbers, the lines that are not JSON. */
interface JsonLinesChunk {
  values: unknown[];
  lineNumbers: number[];
  notJson: RefusedLine[];
  /** Bytes of the file read so far. */
  bytesRead: number;
}

/** Reads a JSON-lines file in chunks of {@link LINES_PER_CALL} values. */
async function* readJsonLines(file: string): AsyncGenerator<JsonLinesChunk, void, undefined> {
  const input = createReadStream(file, { encoding: 'utf8' });
  const lines = createInterface({ input, crlfDelay: Infinity });
  const newChunk = (): JsonLinesChunk => ({ values: [], lineNumbers: [], notJson: [], bytesRead: 0 });
  let chunk = newChunk();
  let number = 0;
  for await (const text of lines) {
    number++;
    if (text.trim() === '') continue;
    try {
      chunk.values.push(JSON.parse(text));
      chunk.lineNumbers.push(number);
    } catch {
      chunk.notJson.push({ line: number, reason: '(line): not valid JSON' });
    }
    if (chunk.values.length >= LINES_PER_CALL) {
      chunk.bytesRead = input.bytesRead;
      yield chunk;
      chunk = newChunk();
    }
  }
  chunk.bytesRead = input.bytesRead;
  if (chunk.values.length > 0 || chunk.notJson.length > 0) yield chunk;
}

/**
 * Runs async tasks with at most `limit` at once: `add` waits for a free slot, `drain` for every task; both
 * rethrow the first failure (no task starts after it).
 */
function inFlight(limit: number) {
  const running = new Set<Promise<void>>();
  let failure: { error: unknown } | undefined;
  const rethrow = () => {
    if (failure) throw failure.error;
  };
  return {
    async add(task: () => Promise<void>): Promise<void> {
      while (running.size >= limit) await Promise.race(running);
      rethrow();
      const promise: Promise<void> = task()
        .catch((error: unknown) => {
          failure ??= { error };
        })
        .finally(() => running.delete(promise));
      running.add(promise);
    },
    async drain(): Promise<void> {
      await Promise.all(running);
      rethrow();
    },
  };
}

function requireWorkspace(value: string | undefined): string {
  if (value === undefined || value === '') throw new UsageError('--workspace <id> is required');
  return value;
}

function requireFile(value: string | undefined): string {
  if (value === undefined || value === '') throw new UsageError('--file <f.jsonl> is required');
  return value;
}

function positiveInteger(name: string, value: string | undefined, required: boolean): number | undefined {
  if (value === undefined) {
    if (required) throw new UsageError(`--${name} <n> is required`);
    return undefined;
  }
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new UsageError(`--${name} must be a whole number, got "${value}"`);
  return n;
}

function failIfRefused(invalid: readonly RefusedLine[], what: string): void {
  if (invalid.length > 0) {
    throw new Error(`${invalid.length} ${what} refused (listed above); the others were written`);
  }
}

/** Builds the data commands; `commands` below is the set the CLI loads. */
export function createDataCommands(deps: DataCommandDeps = {}): Command[] {
  const out = deps.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const err = deps.err ?? ((line: string) => process.stderr.write(`${line}\n`));
  const silentLogger = createLogger({ logLevel: 'SILENT' });
  const config = deps.config ?? (() => loadRuntimeConfig());
  let loaded: { config: RuntimeConfig; tables: ReturnType<typeof operatorTables> } | undefined;
  /** The configuration and its store options, read once, when a command first needs them. */
  const runtime = () => {
    if (loaded === undefined) {
      const read = config();
      loaded = { config: read, tables: operatorTables(read) };
    }
    return loaded;
  };
  const tables = () => runtime().tables;
  const writer =
    deps.writer ??
    (() =>
      new EventLogWriter({
        ...tables().events,
        // The CLI reports refused lines itself; the writer's JSON log lines would corrupt `--json` output on
        // stdout, so its metrics go to stderr.
        logger: silentLogger,
        explicitRecordedAt: { refuseAtOrBehind: new ControlExportPositions(tables().control) },
        // An hour imported into after it ended is archived again by the next compaction.
        lateHours: new ArchiveCursorStore(tables().control),
        metrics: powertoolsIngestMetrics((line) => process.stderr.write(`${line}\n`)),
      }));
  const now = deps.now ?? Date.now;
  const deadLetterQueue = deps.deadLetterQueue ?? ((queueUrl) => new SqsDeadLetterQueue({ queueUrl }));
  const rejectedStore =
    deps.rejected ??
    (() =>
      new DynamoRejectedEvents({ tableName: tables().control.tableName, client: tables().events.client }));
  const erasureLog = () => deps.erasures?.() ?? new ErasureLogStore(tables().control);
  /** Bus events are written the ingest function's way: recorded at this clock. */
  const busWriter = () =>
    deps.writer?.() ??
    new EventLogWriter({ ...tables().events, logger: silentLogger, explicitRecordedAt: 'ignore' });

  const reportRefused = (invalid: readonly RefusedLine[]) => {
    for (const { line, reason } of invalid) err(`line ${line}: ${reason}`);
  };

  const eventsIngest = new Command('ingest')
    .description('write events from a JSON-lines file')
    .option('--workspace <id>', 'the workspace')
    .option('--file <f.jsonl>', 'one event a line: {"dataset": …, …row}')
    .option('--json', 'print the summary as JSON')
    .action(async (values: { workspace?: string; file?: string; json?: boolean }) => {
      const workspaceId = requireWorkspace(values.workspace);
      const file = requireFile(values.file);
      const fileBytes = (await stat(file)).size;
      const target = writer();
      const progress = createProgress({ unit: 'lines', stream: deps.progress, now });
      const calls = inFlight(CALLS_IN_FLIGHT);
      let linesDone = 0;
      const summary: EventsIngestSummary = {
        lines: 0,
        accepted: 0,
        duplicates: 0,
        dropped: { test: 0, history: 0, late: 0 },
        invalid: [],
        refusedBehindExport: 0,
      };
      for await (const chunk of readJsonLines(file)) {
        summary.lines += chunk.values.length + chunk.notJson.length;
        summary.invalid.push(...chunk.notJson);
        await calls.add(async () => {
          if (chunk.values.length > 0) {
            const result = await target.ingestEvents(workspaceId, chunk.values);
            summary.accepted += result.accepted;
            summary.duplicates += result.duplicates;
            summary.dropped.test += result.dropped.test;
            summary.dropped.history += result.dropped.history;
            summary.dropped.late += result.dropped.late;
            summary.refusedBehindExport += result.refusedBehindExport;
            if (result.currentRows) {
              summary.currentRows ??= emptyCurrentRowCounts();
              const counts = summary.currentRows;
              for (const name of Object.keys(counts) as (keyof CurrentRowCounts)[])
                counts[name] += result.currentRows[name];
            }
            for (const { index, reason } of result.invalid)
              summary.invalid.push({ line: chunk.lineNumbers[index]!, reason });
          }
          linesDone += chunk.values.length + chunk.notJson.length;
          progress.update(linesDone, fileBytes > 0 ? chunk.bytesRead / fileBytes : 1);
        });
      }
      await calls.drain();
      progress.finish();
      summary.invalid.sort((a, b) => a.line - b.line);
      if (values.json) out(JSON.stringify(summary));
      else {
        out(
          `Workspace ${workspaceId}: ${summary.lines} lines, ${summary.accepted} events written` +
            (summary.duplicates ? ` (${summary.duplicates} exact duplicates written once)` : '') +
            `, dropped ${summary.dropped.test} test, ${summary.dropped.history} history, ` +
            `${summary.dropped.late} late, ${summary.invalid.length} refused` +
            (summary.refusedBehindExport
              ? ` (${summary.refusedBehindExport} recorded at or behind an export's position)`
              : '') +
            (summary.currentRows ? `; ${currentRowsText(summary.currentRows)}` : ''),
        );
      }
      reportRefused(summary.invalid);
      failIfRefused(summary.invalid, 'lines were');
    });

  const eventsRedrive = new Command('redrive')
    .description('write the bus events waiting in the ingest dead-letter queue')
    .option('--queue-url <url>', 'the IngestDeadLetterQueueUrl output (default: $SLUICE_INGEST_DLQ_URL)')
    .option('--max <n>', 'at most this many messages')
    .option('--json', 'print the summary as JSON')
    .action(async (values: { queueUrl?: string; max?: string; json?: boolean }) => {
      const queueUrl = values.queueUrl ?? runtime().config.ingestDeadLetterQueueUrl;
      if (queueUrl === undefined || queueUrl === '') {
        throw new UsageError(
          '--queue-url <url> is required (the IngestDeadLetterQueueUrl output), or set SLUICE_INGEST_DLQ_URL',
        );
      }
      const maxMessages = positiveInteger('max', values.max, false);
      const summary: RedriveSummary = await redriveDeadLetters(
        deadLetterQueue(queueUrl),
        busWriter(),
        silentLogger,
        {
          // What the ingest rules refuse is kept with its reasons (`events rejected list`), not only reported.
          rejected: rejectedStore(),
          // Erasures that ran after a message was sent take the erased people's rows out of it.
          erasures: erasureLog(),
          ...(maxMessages === undefined ? {} : { maxMessages }),
        },
      );
      if (values.json) out(JSON.stringify(summary));
      else {
        const { events, subscribers } = summary;
        out(
          `${summary.messages} messages: ${summary.redriven} redriven, ${summary.left.length} left in the queue. ` +
            `Events: ${events.accepted} written, dropped ${events.dropped.test} test, ${events.dropped.history} ` +
            `history, ${events.dropped.late} late (sent more than 7 days after they occurred), ` +
            `${events.invalid} refused. Subscribers: ${subscribers.upserted} upserted, ${subscribers.deleted} deleted, ` +
            `${subscribers.invalid} refused.` +
            (summary.erased.events + summary.erased.subscribers > 0
              ? ` Left out as erased: ${summary.erased.events} events, ${summary.erased.subscribers} subscribers.`
              : ''),
        );
      }
      for (const { messageId, reason } of summary.refused) err(`message ${messageId} refused: ${reason}`);
      for (const { messageId, reason } of summary.left) err(`message ${messageId} left: ${reason}`);
      if (summary.left.length > 0) {
        throw new Error(`${summary.left.length} messages stay in the queue (listed above); run again later`);
      }
    });

  const rejectedList = new Command('list')
    .description('the rows and envelopes ingestion refused, with their reasons')
    .option('--workspace <id>', 'only this workspace')
    .option('--json', 'one rejection a line as JSON')
    .action(async (values: { workspace?: string; json?: boolean }) => {
      let count = 0;
      for await (const rejection of rejectedStore().list(values.workspace)) {
        count++;
        if (values.json) {
          out(JSON.stringify(rejection));
          continue;
        }
        const sent = rejection.event.time ?? 'unknown time';
        out(
          `${rejection.workspaceId} ${rejection.id} (${rejection.kind}, ${rejection.event['detail-type']} from ` +
            `${rejection.event.source ?? 'no source'}, sent ${sent}, rejected ${rejection.rejectedAt})`,
        );
        for (const reason of rejection.reasons) out(`  ${reason}`);
      }
      if (!values.json) out(`${count} rejections`);
    });

  const rejectedRedrive = new Command('redrive')
    .description('ingest the refused rows again')
    .option('--workspace <id>', 'only this workspace')
    .option('--id <id>', 'only this rejection (with --workspace)')
    .option('--json', 'print the summary as JSON')
    .action(async (values: { workspace?: string; id?: string; json?: boolean }) => {
      if (values.id !== undefined && values.workspace === undefined) {
        throw new UsageError('--id needs --workspace (ids are per workspace: `events rejected list`)');
      }
      const summary = await redriveRejected(rejectedStore(), busWriter(), silentLogger, {
        erasures: erasureLog(),
        ...(values.workspace === undefined ? {} : { workspaceId: values.workspace }),
        ...(values.id === undefined ? {} : { id: values.id }),
      });
      if (values.json) out(JSON.stringify(summary));
      else {
        out(
          `${summary.rejections} rejections: ${summary.redriven} redriven and removed, ` +
            `${summary.stillRejected.length} refused again, ${summary.left.length} left. Written: ` +
            `${summary.written.events} events, ${summary.written.subscribers} subscriber changes.`,
        );
      }
      for (const { workspaceId, id, reasons } of summary.stillRejected) {
        err(`${workspaceId} ${id} refused again: ${reasons.join('; ')}`);
      }
      for (const { workspaceId, id, reason } of summary.left) err(`${workspaceId} ${id} left: ${reason}`);
      const kept = summary.stillRejected.length + summary.left.length;
      if (kept > 0) throw new Error(`${kept} rejections stay (listed above)`);
    });

  const subscribersUpsert = new Command('upsert')
    .description('write subscribers from a JSON-lines file')
    .option('--workspace <id>', 'the workspace')
    .option('--file <f.jsonl>', 'one subscriber a line')
    .option('--json', 'print the summary as JSON')
    .action(async (values: { workspace?: string; file?: string; json?: boolean }) => {
      const workspaceId = requireWorkspace(values.workspace);
      const file = requireFile(values.file);
      const target = writer();
      const summary: SubscribersUpsertSummary = { lines: 0, accepted: 0, invalid: [] };
      for await (const chunk of readJsonLines(file)) {
        summary.lines += chunk.values.length + chunk.notJson.length;
        summary.invalid.push(...chunk.notJson);
        if (chunk.values.length === 0) continue;
        const result = await target.upsertSubscribers(workspaceId, chunk.values);
        summary.accepted += result.accepted;
        for (const { index, reason } of result.invalid)
          summary.invalid.push({ line: chunk.lineNumbers[index]!, reason });
      }
      summary.invalid.sort((a, b) => a.line - b.line);
      if (values.json) out(JSON.stringify(summary));
      else {
        out(
          `Workspace ${workspaceId}: ${summary.lines} lines, ${summary.accepted} subscribers written, ` +
            `${summary.invalid.length} refused`,
        );
      }
      reportRefused(summary.invalid);
      failIfRefused(summary.invalid, 'lines were');
    });

  const subscribersDelete = new Command('delete')
    .description('delete subscribers by id')
    .option('--workspace <id>', 'the workspace')
    .option('--ids <a,b,...>', 'the subscriber ids')
    .option('--json', 'print the result as JSON')
    .action(async (values: { workspace?: string; ids?: string; json?: boolean }) => {
      const workspaceId = requireWorkspace(values.workspace);
      const ids = (values.ids ?? '')
        .split(',')
        .map((id) => id.trim())
        .filter(Boolean);
      if (ids.length === 0) throw new UsageError('--ids <a,b,...> is required');
      const result: SubscriberWriteResult = await writer().deleteSubscribers(workspaceId, ids);
      if (values.json) out(JSON.stringify(result));
      else
        out(
          `Workspace ${workspaceId}: ${result.accepted} subscribers deleted, ${result.invalid.length} refused`,
        );
      for (const { index, reason } of result.invalid) err(`id ${index + 1}: ${reason}`);
      if (result.invalid.length > 0) throw new Error(`${result.invalid.length} ids were refused`);
    });

  const seed = new Command('seed')
    .description('generate realistic data and ingest it')
    .option('--workspace <id>', 'the workspace')
    .option('--events <n>', 'events (per dataset with --datasets)')
    .option('--datasets <a,b>', "the datasets (default: the first product's three event datasets)")
    .option('--subscribers <n>', 'subscribers')
    .option('--since <iso|30m|1h|2d>', 'recorded from then to now (default: now)')
    .option('--seed <n>', 'the generator seed')
    .option('--json', 'print the summary as JSON')
    .action(
      async (values: {
        workspace?: string;
        events?: string;
        datasets?: string;
        subscribers?: string;
        since?: string;
        seed?: string;
        json?: boolean;
      }) => {
        const workspaceId = requireWorkspace(values.workspace);
        const count = positiveInteger('events', values.events, true)!;
        const datasets = values.datasets === undefined ? undefined : seedDatasets(values.datasets);
        const subscribers =
          positiveInteger('subscribers', values.subscribers, false) ??
          (datasets?.includes('subscribers') ? count : undefined);
        const seedValue = positiveInteger('seed', values.seed, false) ?? now() % 2_147_483_647;
        const started = now();
        let since: number | undefined;
        if (values.since !== undefined) {
          since = parseSince(values.since, started);
          if (!Number.isFinite(since))
            throw new UsageError(
              `--since must be an ISO 8601 time or a duration back from now (30m, 1h, 2d), got "${values.since}"`,
            );
          if (since >= started) throw new UsageError('--since must be in the past');
          if (started - since > 30 * 86_400_000)
            throw new UsageError('--since may reach back at most 30 days');
        }
        const target = writer();

        let subscribersWritten = 0;
        if (subscribers) {
          let batch: unknown[] = [];
          for (const row of generateSubscribers({
            count: subscribers,
            seed: seedValue,
            workspaceId,
            now: started,
          })) {
            batch.push(row);
            if (batch.length === LINES_PER_CALL) {
              subscribersWritten += (await target.upsertSubscribers(workspaceId, batch)).accepted;
              batch = [];
            }
          }
          if (batch.length > 0)
            subscribersWritten += (await target.upsertSubscribers(workspaceId, batch)).accepted;
        }

        const totals = { accepted: 0, dropped: 0, invalid: 0, refusedBehindExport: 0 };
        const byDataset: Record<string, number> = Object.fromEntries(
          (datasets ?? ['email_events', 'sms_events', 'custom_events'])
            .filter((dataset) => dataset !== 'subscribers')
            .map((dataset) => [dataset, 0]),
        );
        const eventDatasets = datasets?.filter((dataset) => dataset !== 'subscribers');
        const total = eventDatasets === undefined ? count : count * eventDatasets.length;
        const progress = createProgress({ unit: 'events', total, stream: deps.progress, now });
        const calls = inFlight(CALLS_IN_FLIGHT);
        let eventsDone = 0;
        const range =
          since === undefined
            ? { from: started - 3_600_000, to: started, recordedAt: false }
            : { from: since, to: started, recordedAt: true };
        const events: Iterable<{ dataset: string }> =
          datasets === undefined
            ? generateEvents({
                count,
                seed: seedValue,
                workspaceId,
                ...(subscribers ? { subscribers } : {}),
                ...range,
              })
            : seededRows(datasets, { count, seed: seedValue, workspaceId, ...range });
        let batch: { dataset: string }[] = [];
        const flush = () => {
          const inputs = batch;
          batch = [];
          return calls.add(async () => {
            const result = await target.ingestEvents(workspaceId, inputs);
            totals.accepted += result.accepted;
            totals.dropped += result.dropped.test + result.dropped.history + result.dropped.late;
            totals.invalid += result.invalid.length - result.refusedBehindExport;
            totals.refusedBehindExport += result.refusedBehindExport;
            eventsDone += inputs.length;
            progress.update(eventsDone);
          });
        };
        for (const event of events) {
          byDataset[event.dataset] = (byDataset[event.dataset] ?? 0) + 1;
          batch.push(event);
          if (batch.length === LINES_PER_CALL) await flush();
        }
        if (batch.length > 0) await flush();
        await calls.drain();
        progress.finish();

        const seconds = Math.max(0.001, (now() - started) / 1000);
        const summary = {
          workspaceId,
          seed: seedValue,
          events: totals.accepted,
          byDataset,
          subscribers: subscribersWritten,
          dropped: totals.dropped,
          invalid: totals.invalid,
          refusedBehindExport: totals.refusedBehindExport,
          recorded:
            since === undefined
              ? 'now'
              : { from: new Date(since).toISOString(), to: new Date(started).toISOString() },
          seconds: Math.round(seconds * 1000) / 1000,
          eventsPerSecond: Math.round(totals.accepted / seconds),
        };
        if (values.json) {
          out(JSON.stringify(summary));
        } else {
          out(
            `Seeded workspace ${workspaceId} (seed ${seedValue}): ${totals.accepted} events ` +
              (datasets === undefined
                ? `(${byDataset.email_events} email, ${byDataset.sms_events} sms, ${byDataset.custom_events} custom)`
                : `(${Object.entries(byDataset)
                    .map(([dataset, n]) => `${n} ${dataset}`)
                    .join(', ')})`) +
              (subscribers ? ` and ${subscribersWritten} subscribers` : '') +
              ` in ${summary.seconds} s, ${summary.eventsPerSecond} events/s`,
          );
          out(
            since === undefined
              ? 'Recorded now: a running export picks them up at its next run (exports trail real time by ~2 minutes).'
              : `Recorded from ${new Date(since).toISOString()} to now; ${totals.refusedBehindExport} refused ` +
                  "for being at or behind an export's position (they would never be exported).",
          );
        }
        if (totals.invalid > 0)
          throw new Error(`${totals.invalid} generated events were refused (a generator bug)`);
        if (totals.refusedBehindExport > 0)
          throw new Error(
            `${totals.refusedBehindExport} events were refused: recorded at or behind an export's position ` +
              '(use a later --since, or none); the others were written',
          );
      },
    );

  return [
    commandGroup('events', [
      eventsIngest,
      eventsRedrive,
      commandGroup('rejected', [rejectedList, rejectedRedrive]),
    ]),
    commandGroup('subscribers', [subscribersUpsert, subscribersDelete]),
    seed,
  ];
}

/** The datasets of `seed --datasets a,b`: known names, no repeats; a usage error otherwise. */
function seedDatasets(list: string): Dataset[] {
  const names = list.split(',').map((name) => name.trim());
  const unknown = names.filter((name) => !isDataset(name));
  if (unknown.length > 0 || names.length === 0)
    throw new UsageError(`--datasets: unknown ${unknown.join(', ')}; one or more of ${DATASETS.join(', ')}`);
  return [...new Set(names)] as Dataset[];
}

/**
 * The rows `seed --datasets` generates: `count` per event dataset, one dataset after the other (the first
 * product's with `generateEvents`, the second's with `generateDatasetRows`). Subscribers are seeded apart.
 */
function* seededRows(
  datasets: readonly Dataset[],
  options: {
    count: number;
    seed: number;
    workspaceId: string;
    from: number;
    to: number;
    recordedAt: boolean;
  },
): Generator<{ dataset: string }> {
  for (const dataset of datasets) {
    if (dataset === 'subscribers') continue;
    if (isSecondProductDataset(dataset)) yield* generateDatasetRows({ ...options, dataset });
    else yield* generateEvents({ ...options, mix: { [dataset]: 1 } });
  }
}

const SINCE_UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--since` of `seed`: an ISO 8601 time, or a duration back from `nowMs` (`30m`, `1h`, `2d`); NaN otherwise. */
export function parseSince(value: string, nowMs: number): number {
  const back = /^(\d+)([mhd])$/.exec(value);
  if (back) return nowMs - Number(back[1]) * (SINCE_UNIT_MS[back[2] as string] as number);
  return Date.parse(value);
}

/** The current-row counts of `events ingest`, in words. */
function currentRowsText(counts: CurrentRowCounts): string {
  return (
    `messages and projects: ${counts.emitted} rows to export, ${counts.kept} changes kept for the next status ` +
    `change, ${counts.outOfOrder} ignored (updated_at not newer), ${counts.notComplete} projects not complete, ` +
    `${counts.afterCompletion} received again after completion`
  );
}
