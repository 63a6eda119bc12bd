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
 * - `seed --workspace <id> --events <n> [--subscribers <n>] [--since <iso>] [--seed <n>] [--json]`: generates
 *   realistic data and ingests it. Without `--since` the events are recorded now, as they are written (their
 *   `occurred_at` spread over the hour before), so a running export picks them up at its next run. With
 *   `--since` they are recorded spread from that time to now, and those at or behind an export's position are
 *   refused and counted (`refusedBehindExport`), as for `events ingest`.
 *
 * A bad line (not JSON, or refused by the ingest rules) is reported with its line number and reason; the other
 * lines are still written. The command then fails (exit code 1) after printing its counts, so a script notices.
 * Blank lines are skipped.
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { Logger } from '@aws-lambda-powertools/logger';
import { ControlExportPositions } from '@sluice/control';
import {
  EventLogWriter,
  generateEvents,
  generateSubscribers,
  type IngestResult,
  powertoolsIngestMetrics,
  type SubscriberWriteResult,
} from '@sluice/eventlog';
import { type CliCommand, CliUsageError } from './command.js';
import { redactSecrets } from '@sluice/core';

/** Lines sent to the writer per call. */
const LINES_PER_CALL = 1_000;

/** What the data commands need, injectable for tests. */
export interface DataCommandDeps {
  /** @default an `EventLogWriter` on the environment the dispatcher set (created when a command runs) */
  writer?: () => Pick<EventLogWriter, 'ingestEvents' | 'upsertSubscribers' | 'deleteSubscribers'>;
  /** @default a line on stdout */
  out?: (line: string) => void;
  /** @default a line on stderr */
  err?: (line: string) => void;
  /** @default Date.now */
  now?: () => number;
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
}

/** What `subscribers upsert` did (its `--json` output). */
export interface SubscribersUpsertSummary {
  lines: number;
  accepted: number;
  invalid: RefusedLine[];
}

/** Reads a JSON-lines file in chunks: parsed values with their line numbers, and the lines that are not JSON. */
async function* readJsonLines(
  file: string,
): AsyncGenerator<{ values: unknown[]; lineNumbers: number[]; notJson: RefusedLine[] }, void, undefined> {
  const lines = createInterface({ input: createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity });
  let chunk = { values: [] as unknown[], lineNumbers: [] as number[], notJson: [] as RefusedLine[] };
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
      yield chunk;
      chunk = { values: [], lineNumbers: [], notJson: [] };
    }
  }
  if (chunk.values.length > 0 || chunk.notJson.length > 0) yield chunk;
}

function requireWorkspace(value: string | undefined): string {
  if (value === undefined || value === '') throw new CliUsageError('--workspace <id> is required');
  return value;
}

function requireFile(value: string | undefined): string {
  if (value === undefined || value === '') throw new CliUsageError('--file <f.jsonl> is required');
  return value;
}

function positiveInteger(name: string, value: string | undefined, required: boolean): number | undefined {
  if (value === undefined) {
    if (required) throw new CliUsageError(`--${name} <n> is required`);
    return undefined;
  }
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw new CliUsageError(`--${name} must be a whole number, got "${value}"`);
  return n;
}

function failIfRefused(invalid: readonly RefusedLine[], what: string): void {
  if (invalid.length > 0) {
    throw new Error(`${invalid.length} ${what} refused (listed above); the others were written`);
  }
}

/** Builds the data commands; `commands` below is the set the CLI loads. */
export function createDataCommands(deps: DataCommandDeps = {}): CliCommand[] {
  const out = deps.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const err = deps.err ?? ((line: string) => process.stderr.write(`${line}\n`));
  // The CLI reports refused lines itself; the writer's JSON log lines would corrupt `--json` output on stdout,
  // so its metrics go to stderr.
  const writer =
    deps.writer ??
    (() =>
      new EventLogWriter({
        logger: new Logger({ serviceName: 'sluice-cli', jsonReplacerFn: redactSecrets, logLevel: 'SILENT' }),
        explicitRecordedAt: { refuseAtOrBehind: new ControlExportPositions() },
        metrics: powertoolsIngestMetrics((line) => process.stderr.write(`${line}\n`)),
      }));
  const now = deps.now ?? Date.now;

  const reportRefused = (invalid: readonly RefusedLine[]) => {
    for (const { line, reason } of invalid) err(`line ${line}: ${reason}`);
  };

  const eventsIngest: CliCommand = {
    name: 'events ingest',
    usage: 'events ingest --workspace <id> --file <f.jsonl> [--json]',
    async run(args) {
      const { values } = parseArgs({
        args,
        options: {
          workspace: { type: 'string' },
          file: { type: 'string' },
          json: { type: 'boolean', default: false },
        },
        strict: true,
      });
      const workspaceId = requireWorkspace(values.workspace);
      const file = requireFile(values.file);
      const target = writer();
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
        if (chunk.values.length === 0) continue;
        const result = await target.ingestEvents(workspaceId, chunk.values);
        summary.accepted += result.accepted;
        summary.duplicates += result.duplicates;
        summary.dropped.test += result.dropped.test;
        summary.dropped.history += result.dropped.history;
        summary.dropped.late += result.dropped.late;
        summary.refusedBehindExport += result.refusedBehindExport;
        for (const { index, reason } of result.invalid)
          summary.invalid.push({ line: chunk.lineNumbers[index]!, reason });
      }
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
              : ''),
        );
      }
      reportRefused(summary.invalid);
      failIfRefused(summary.invalid, 'lines were');
    },
  };

  const subscribersUpsert: CliCommand = {
    name: 'subscribers upsert',
    usage: 'subscribers upsert --workspace <id> --file <f.jsonl> [--json]',
    async run(args) {
      const { values } = parseArgs({
        args,
        options: {
          workspace: { type: 'string' },
          file: { type: 'string' },
          json: { type: 'boolean', default: false },
        },
        strict: true,
      });
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
    },
  };

  const subscribersDelete: CliCommand = {
    name: 'subscribers delete',
    usage: 'subscribers delete --workspace <id> --ids <a,b,...> [--json]',
    async run(args) {
      const { values } = parseArgs({
        args,
        options: {
          workspace: { type: 'string' },
          ids: { type: 'string' },
          json: { type: 'boolean', default: false },
        },
        strict: true,
      });
      const workspaceId = requireWorkspace(values.workspace);
      const ids = (values.ids ?? '')
        .split(',')
        .map((id) => id.trim())
        .filter(Boolean);
      if (ids.length === 0) throw new CliUsageError('--ids <a,b,...> is required');
      const result: SubscriberWriteResult = await writer().deleteSubscribers(workspaceId, ids);
      if (values.json) out(JSON.stringify(result));
      else
        out(
          `Workspace ${workspaceId}: ${result.accepted} subscribers deleted, ${result.invalid.length} refused`,
        );
      for (const { index, reason } of result.invalid) err(`id ${index + 1}: ${reason}`);
      if (result.invalid.length > 0) throw new Error(`${result.invalid.length} ids were refused`);
    },
  };

  const seed: CliCommand = {
    name: 'seed',
    usage: 'seed --workspace <id> --events <n> [--subscribers <n>] [--since <iso>] [--seed <n>] [--json]',
    async run(args) {
      const { values } = parseArgs({
        args,
        options: {
          workspace: { type: 'string' },
          events: { type: 'string' },
          subscribers: { type: 'string' },
          since: { type: 'string' },
          seed: { type: 'string' },
          json: { type: 'boolean', default: false },
        },
        strict: true,
      });
      const workspaceId = requireWorkspace(values.workspace);
      const count = positiveInteger('events', values.events, true)!;
      const subscribers = positiveInteger('subscribers', values.subscribers, false);
      const seedValue = positiveInteger('seed', values.seed, false) ?? now() % 2_147_483_647;
      const started = now();
      let since: number | undefined;
      if (values.since !== undefined) {
        since = Date.parse(values.since);
        if (!Number.isFinite(since))
          throw new CliUsageError(`--since must be an ISO 8601 time, got "${values.since}"`);
        if (since >= started) throw new CliUsageError('--since must be in the past');
        if (started - since > 30 * 86_400_000)
          throw new CliUsageError('--since may reach back at most 30 days');
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
      const byDataset: Record<string, number> = { email_events: 0, sms_events: 0, custom_events: 0 };
      const events = generateEvents({
        count,
        seed: seedValue,
        workspaceId,
        ...(subscribers ? { subscribers } : {}),
        ...(since === undefined
          ? { from: started - 3_600_000, to: started, recordedAt: false }
          : { from: since, to: started, recordedAt: true }),
      });
      let batch: { dataset: string }[] = [];
      const flush = async () => {
        const result = await target.ingestEvents(workspaceId, batch);
        totals.accepted += result.accepted;
        totals.dropped += result.dropped.test + result.dropped.history + result.dropped.late;
        totals.invalid += result.invalid.length - result.refusedBehindExport;
        totals.refusedBehindExport += result.refusedBehindExport;
        batch = [];
      };
      for (const event of events) {
        byDataset[event.dataset] = (byDataset[event.dataset] ?? 0) + 1;
        batch.push(event);
        if (batch.length === LINES_PER_CALL) await flush();
      }
      if (batch.length > 0) await flush();

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
            `(${byDataset.email_events} email, ${byDataset.sms_events} sms, ${byDataset.custom_events} custom)` +
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
  };

  return [eventsIngest, subscribersUpsert, subscribersDelete, seed];
}

/** The data commands of the `npm run sluice` CLI. */
export const commands: CliCommand[] = createDataCommands();
