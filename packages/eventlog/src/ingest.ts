/**
 * Ingestion: the library producers call (and the ingest Lambda wraps) to write events and subscribers.
 *
 * Rules, applied to each event in order:
 * 1. not an object, or `dataset` not one of `email_events`, `sms_events`, `custom_events`: refused (invalid);
 * 2. `test: true` (a test send): dropped, counted in `dropped.test`;
 * 3. the row does not match its schema (see `@sluice/core` rows): refused with the reason, never written;
 * 4. a history import: dropped, counted in `dropped.history`. An event is an import when it carries
 *    `import: true` or `source: "import"`; it is history when it occurred more than one hour before it
 *    arrived (the reference: "Import Events with timestamps older than an hour"). An import of something that
 *    just happened is streamed like any event;
 * 5. arrived more than 7 days after it occurred: dropped, counted in `dropped.late`;
 * 6. occurred more than 24 hours after it is recorded, or an explicit `recorded_at` more than 24 hours ahead of
 *    now ({@link MAX_RECORDED_AHEAD_MS}; a producer's clock or unit is wrong): refused;
 * 7. serialized row above 350,000 bytes (DynamoDB items hold 400 KB): refused.
 *
 * `dataset`, `test`, `import` and `source` are envelope fields, not row fields: they are not stored. Unknown
 * fields are dropped.
 *
 * "Arrived" is when the producer handed the event over: its recorded time, or the earlier `sentAtMs` a caller
 * gives (the bus event's `time`). So an event that waited in Sluice's dead-letter queue is judged by when it
 * was sent, not by when it was redriven, and is not dropped as late because Sluice was slow.
 *
 * Recorded time is assigned here: now, taken once per slice of {@link INGEST_SLICE} inputs just before the slice is
 * validated and written. An input's explicit `recorded_at` (imports and tests) is treated as the writer's
 * {@link ExplicitRecordedAt} says: ignored on the bus (the ingest's own clock, always); in the CLI honoured only
 * ahead of every export of the workspace: exports advance a position of recorded time, so a row recorded at or
 * behind it would be accepted and never exported. Such a row is refused (`refusedBehindExport`, with a reason,
 * and the {@link IngestMetrics} count); the positions are read once per slice that has an explicit time.
 * The check and the write are a few milliseconds apart: a run planning in between could still pass a row
 * recorded in the last moments before the plan (a window ends at least two minutes before now).
 *
 * Rows are written as compressed segments (segments.ts): one a slice, dataset and hour (more for a long span).
 * Writes are idempotent per (recorded time, id): an event written twice with the same explicit `recorded_at`
 * is read as one row (the later write's). A retry without it is a second row with a later recorded time, which consumers deduplicate on
 * `id` (the product promises at least once).
 */
import type { DynamoDBClient, WriteRequest } from '@aws-sdk/client-dynamodb';
import type { Logger } from '@aws-lambda-powertools/logger';
import {
  CATALOG,
  EVENT_DATASETS,
  type EventRow,
  type EventDataset,
  ID_PATTERN,
  parseRow,
  serializeRow,
  timestamp,
  createLogger,
  currentRowKeyOf,
} from '@sluice/core';
import { type BatchWriteOptions, batchWrite } from './batch.js';
import {
  type CurrentRowCounts,
  type CurrentRowInput,
  CurrentRowStore,
  currentRowSpecOf,
  emptyCurrentRowCounts,
} from './current-rows.js';
import { defaultEventLogClient, resolveRetentionSeconds, resolveTableName } from './client.js';
import type { ExportPositions, LateHours } from './export-positions.js';
import {
  assertWorkspaceId,
  eventSk,
  HOUR_MS,
  hourStart,
  SUBSCRIBER_SHARDS,
  shardOf,
  subscriberPk,
} from './keys.js';
import { type IngestMetrics, powertoolsIngestMetrics } from './metrics.js';
import { recordPerRowUntil } from './per-row-until.js';
import { segmentPutRequests } from './segments.js';

/** Imports that occurred more than this before they are recorded are history and not streamed. */
export const HISTORY_IMPORT_AGE_MS = 60 * 60 * 1000;
/** Events recorded more than this after they occurred are not part of the stream. */
export const MAX_LATENESS_MS = 7 * 24 * 60 * 60 * 1000;
/** Events may not occur more than this after they are recorded. */
export const MAX_FUTURE_SKEW_MS = 24 * 60 * 60 * 1000;
/**
 * An explicit `recorded_at` may be at most this far ahead of the ingest's clock (further is a wrong clock or
 * unit): the latest hour of the event log that can hold rows, which erasure searches up to.
 */
export const MAX_RECORDED_AHEAD_MS = 24 * 60 * 60 * 1000;
/**
 * Inputs validated and written together. Each slice is recorded when it starts, so a row is written within
 * seconds of its recorded time even in a call of a million events, well inside the exports' two-minute lag.
 */
export const INGEST_SLICE = 1_000;
/** The largest serialized row accepted, in bytes. */
export const MAX_LINE_BYTES = 350_000;

/** One event as a producer sends it: the row's fields plus the envelope. */
export interface EventInput {
  dataset: EventDataset;
  /** A test send: dropped. */
  test?: boolean;
  /** A history import (with `source: 'import'`): dropped when it occurred more than an hour ago. */
  import?: boolean;
  source?: string;
  /** Explicit recorded time (ISO or epoch ms), for imports and tests; see {@link ExplicitRecordedAt}. */
  recorded_at?: string | number;
  [field: string]: unknown;
}

/** An input that was refused, by its position in the call. */
export interface InvalidInput {
  index: number;
  reason: string;
}

/** What {@link EventLogWriter.ingestEvents} did with each input. */
export interface IngestResult {
  /** Events written (after removing exact duplicates of one call). */
  accepted: number;
  /** Inputs identical in (dataset, recorded time, id) to another of the same slice of the call: written once. */
  duplicates: number;
  dropped: { test: number; history: number; late: number };
  invalid: InvalidInput[];
  /** Of `invalid`: rows whose explicit `recorded_at` is at or behind an export's position. */
  refusedBehindExport: number;
  /** Inputs whose `recorded_at` was ignored (recorded at the ingest's clock instead): the bus. */
  recordedAtIgnored: number;
  /**
   * What the inputs of `message_events` and `project_summary` did to their current rows, when the call had
   * some (`accepted` counts their emitted and kept ones; refused ones are in `invalid`).
   */
  currentRows?: CurrentRowCounts;
}

/** What {@link EventLogWriter.upsertSubscribers} or {@link EventLogWriter.deleteSubscribers} did. */
export interface SubscriberWriteResult {
  /** Subscribers written or deleted. */
  accepted: number;
  invalid: InvalidInput[];
}

/** Options of one {@link EventLogWriter.ingestEvents} call. */
export interface IngestCallOptions {
  /**
   * When the producer sent these events (epoch ms), if earlier than now: the lateness and history rules
   * measure from it. The ingest function passes the bus event's `time`, so a redrive days later keeps them.
   */
  sentAtMs?: number;
}
/**
 * What an input's explicit `recorded_at` means to a writer:
 * - `'ignore'`: nothing; every row is recorded at the ingest's clock (the bus: producers do not own recorded
 *   time, and a time of theirs could fall behind an export);
 * - `{ refuseAtOrBehind }`: honoured, unless it is at or behind the export position of its workspace and
 *   dataset: then the row is refused with a reason and counted (the CLI's imports and tests);
 * - `'unchecked'`: honoured as given, for tests and benchmarks writing to workspaces no export reads.
 */
export type ExplicitRecordedAt = 'ignore' | 'unchecked' | { refuseAtOrBehind: ExportPositions };

/** Options of {@link EventLogWriter}. */
export interface EventLogWriterOptions {
  /** Required, so every writer says how it treats a producer's `recorded_at`. */
  explicitRecordedAt: ExplicitRecordedAt;
  /** @default {@link powertoolsIngestMetrics} on stdout */
  metrics?: IngestMetrics;
  /** @default the module-level client */
  client?: DynamoDBClient;
  /** The event log table (the entry point reads it from its configuration). */
  eventsTable: string;
  /** The subscribers table. */
  subscribersTable: string;
  /** The clock, epoch ms. @default Date.now */
  now?: () => number;
  /**
   * Seconds an event is kept after it is recorded (its `expiresAt`). Deployments pass their
   * `SLUICE_EVENT_RETENTION_DAYS`; tests may use minutes.
   * @default 35 days
   */
  retentionSeconds?: number;
  /** Retry and concurrency of the batched writes. */
  batch?: BatchWriteOptions;
  /**
   * Where an hour that rows were imported into after it ended is marked, so the event archive's compaction
   * archives it again (the CLI's imports). Required with `explicitRecordedAt: { refuseAtOrBehind }`.
   */
  lateHours?: LateHours;
  /** @default `createLogger()` of `@sluice/core` */
  logger?: Logger;
}

const defaultLogger = createLogger();
const EVENT_DATASET_SET: ReadonlySet<string> = new Set(EVENT_DATASETS);
/** How many refused inputs a log line details. */
const LOGGED_INVALID = 20;

/** Why a row recorded at or behind an export's position is refused: the fix is to let ingest record it now. */
function behindExportReason(dataset: EventDataset, positionMs: number): string {
  return (
    `recorded_at: at or before ${new Date(positionMs).toISOString()}, which an export of this workspace has ` +
    `already reached for ${dataset}: the row would never be exported (leave recorded_at out to record it now)`
  );
}

/** An id that is safe to log: a well-formed id that does not look like an email address. */
function loggableId(value: unknown): string | undefined {
  return typeof value === 'string' && ID_PATTERN.test(value) && !value.includes('@') ? value : undefined;
}

/**
 * Writes events to the event log and subscribers to the subscribers table, batched (BatchWriteItem, 25 a call,
 * unprocessed items retried with backoff). See the module documentation for the rules.
 */
export class EventLogWriter {
  private readonly client: DynamoDBClient;
  private readonly eventsTable: string | undefined;
  private readonly subscribersTable: string | undefined;
  private readonly now: () => number;
  private readonly retentionSeconds: number;
  private readonly batch: BatchWriteOptions;
  private readonly logger: Logger;
  private readonly explicitRecordedAt: ExplicitRecordedAt;
  private readonly metrics: IngestMetrics;
  private readonly lateHours: LateHours | undefined;
  /** The current rows' store, made on first use (a writer of subscribers only never needs it). */
  private currentRowStore: CurrentRowStore | undefined;

  constructor(options: EventLogWriterOptions) {
    if (typeof options.explicitRecordedAt === 'object' && options.lateHours === undefined) {
      throw new Error('An EventLogWriter that honours recorded_at needs lateHours (the archive cursors)');
    }
    this.lateHours = options.lateHours;
    this.client = options.client ?? defaultEventLogClient();
    this.eventsTable = options.eventsTable;
    this.subscribersTable = options.subscribersTable;
    this.now = options.now ?? Date.now;
    this.retentionSeconds = resolveRetentionSeconds(options.retentionSeconds);
    this.batch = options.batch ?? {};
    this.logger = options.logger ?? defaultLogger;
    this.explicitRecordedAt = options.explicitRecordedAt;
    this.metrics = options.metrics ?? powertoolsIngestMetrics();
  }

  private get currentRows(): CurrentRowStore {
    this.currentRowStore ??= new CurrentRowStore({
      client: this.client,
      eventsTable: resolveTableName(this.eventsTable, 'events'),
      retentionSeconds: this.retentionSeconds,
      now: this.now,
    });
    return this.currentRowStore;
  }

  /**
   * Validates, filters and writes events of one workspace. Throws `InvalidInputError` for a bad workspace id and
   * `UnwrittenItemsError` when throttling outlasted the retries (some items may be written: retrying the call
   * is safe, at least once).
   */
  async ingestEvents(
    workspaceId: string,
    inputs: readonly unknown[],
    options: IngestCallOptions = {},
  ): Promise<IngestResult> {
    assertWorkspaceId(workspaceId);
    const result: IngestResult = {
      accepted: 0,
      duplicates: 0,
      dropped: { test: 0, history: 0, late: 0 },
      invalid: [],
      refusedBehindExport: 0,
      recordedAtIgnored: 0,
    };
    for (let offset = 0; offset < inputs.length; offset += INGEST_SLICE) {
      await this.ingestSlice(
        workspaceId,
        inputs.slice(offset, offset + INGEST_SLICE),
        offset,
        result,
        options.sentAtMs,
      );
    }
    this.logger.debug('Ingested events', { workspaceId, ...result, invalid: result.invalid.length });
    return result;
  }

  /**
   * Validates and writes one slice, recorded at the time the slice starts (so recorded time and write time
   * stay seconds apart however long the call is). Adds to `result`; indexes are offset into the call.
   */
  private async ingestSlice(
    workspaceId: string,
    inputs: readonly unknown[],
    offset: number,
    result: IngestResult,
    sentAtMs: number | undefined,
  ): Promise<void> {
    const nowMs = this.now();
    const refused: { index: number; dataset?: string; id?: string; reason: string }[] = [];
    const refuse = (sliceIndex: number, reason: string, input?: Record<string, unknown>) => {
      const index = offset + sliceIndex;
      result.invalid.push({ index, reason });
      const dataset =
        typeof input?.dataset === 'string' && EVENT_DATASET_SET.has(input.dataset)
          ? input.dataset
          : undefined;
      refused.push({
        index,
        reason,
        ...(dataset ? { dataset } : {}),
        ...(input ? { id: loggableId(input.id) } : {}),
      });
    };
    /** The rows to write, by dataset and position (the last of one position in the slice wins). */
    const items = new Map<EventDataset, Map<string, string>>();
    const expiresAt = (recordedMs: number) => Math.floor(recordedMs / 1000) + this.retentionSeconds;
    const positions = await this.exportPositionsFor(workspaceId, inputs);
    const behindByDataset = new Map<EventDataset, number>();
    /** `<dataset>#<hourMs>` of rows recorded explicitly in an hour that has ended. */
    const late = new Set<string>();
    /** The inputs of the current-row datasets, by dataset, in order. */
    const currentInputs = new Map<EventDataset, (CurrentRowInput & { input: Record<string, unknown> })[]>();

    inputs.forEach((raw, index) => {
      if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
        refuse(index, '(event): must be an object');
        return;
      }
      const { dataset, recorded_at, ...rest } = raw as Record<string, unknown>;
      const input = raw as Record<string, unknown>;
      if (typeof dataset !== 'string' || !EVENT_DATASET_SET.has(dataset)) {
        refuse(index, `dataset: must be one of ${EVENT_DATASETS.join(', ')}`, input);
        return;
      }
      const eventDataset = dataset as EventDataset;
      const definition = CATALOG[eventDataset];
      // The first product's envelope: `test`, `import` and `source` are not row fields there.
      const { test, import: isImportFlag, source, ...firstProductFields } = rest;
      const fields = definition.firstProductIngestRules ? firstProductFields : rest;
      if (definition.firstProductIngestRules) {
        if (test !== undefined && typeof test !== 'boolean') {
          refuse(index, 'test: must be a boolean', input);
          return;
        }
        if (test === true) {
          result.dropped.test++;
          return;
        }
      }
      let recordedMs = nowMs;
      if (recorded_at !== undefined && recorded_at !== null && this.explicitRecordedAt === 'ignore') {
        result.recordedAtIgnored++;
      } else if (recorded_at !== undefined && recorded_at !== null) {
        const parsed = timestamp.safeParse(recorded_at);
        if (!parsed.success) {
          refuse(index, 'recorded_at: must be an ISO 8601 time with a zone, or epoch milliseconds', input);
          return;
        }
        recordedMs = Date.parse(parsed.data);
        const position = positions?.get(eventDataset);
        if (position !== undefined && recordedMs <= position) {
          refuse(index, behindExportReason(eventDataset, position), input);
          result.refusedBehindExport++;
          behindByDataset.set(eventDataset, (behindByDataset.get(eventDataset) ?? 0) + 1);
          return;
        }
      }
      if (recordedMs > nowMs + MAX_RECORDED_AHEAD_MS) {
        refuse(index, 'recorded_at: more than 24 hours ahead of now', input);
        return;
      }
      if (currentRowKeyOf(eventDataset) !== undefined) {
        // message_events, project_summary: decided against the current rows after this loop.
        const list = currentInputs.get(eventDataset) ?? [];
        list.push({ index, fields, recordedMs, input });
        currentInputs.set(eventDataset, list);
        return;
      }
      const owner = definition.ownerField === undefined ? {} : { [definition.ownerField]: workspaceId };
      const parsed = parseRow(eventDataset, { ...fields, ...owner, recorded_at: recordedMs });
      if (!parsed.ok) {
        refuse(index, parsed.reason, input);
        return;
      }
      const row = parsed.row;
      if (definition.firstProductIngestRules) {
        const occurredMs = Date.parse((row as EventRow).occurred_at);
        const isImport = isImportFlag === true || source === 'import';
        const arrivedMs = sentAtMs === undefined ? recordedMs : Math.min(recordedMs, sentAtMs);
        if (isImport && arrivedMs - occurredMs > HISTORY_IMPORT_AGE_MS) {
          result.dropped.history++;
          return;
        }
        if (arrivedMs - occurredMs > MAX_LATENESS_MS) {
          result.dropped.late++;
          return;
        }
        if (occurredMs - recordedMs > MAX_FUTURE_SKEW_MS) {
          refuse(index, 'occurred_at: more than 24 hours after the recorded time', input);
          return;
        }
      }
      const line = serializeRow(eventDataset, row);
      if (line.length > MAX_LINE_BYTES / 3 && Buffer.byteLength(line) > MAX_LINE_BYTES) {
        refuse(index, `(row): serialized row exceeds ${MAX_LINE_BYTES} bytes`, input);
        return;
      }
      const hourMs = hourStart(recordedMs);
      if (recordedMs !== nowMs && hourMs + HOUR_MS <= nowMs) late.add(`${eventDataset}#${hourMs}`);
      const sk = eventSk(recordedMs, row.id);
      const rows = items.get(eventDataset) ?? new Map<string, string>();
      items.set(eventDataset, rows);
      if (rows.has(sk)) result.duplicates++;
      rows.set(sk, line);
    });

    for (const [dataset, list] of currentInputs) {
      const outcome = await this.currentRows.ingest(
        workspaceId,
        currentRowSpecOf(dataset, workspaceId),
        list,
      );
      result.currentRows ??= emptyCurrentRowCounts();
      const counts = result.currentRows;
      for (const name of Object.keys(counts) as (keyof CurrentRowCounts)[])
        counts[name] += outcome.counts[name];
      result.accepted += outcome.counts.emitted + outcome.counts.kept;
      const byIndex = new Map(list.map((entry) => [entry.index, entry.input]));
      for (const { index, reason } of outcome.refused) refuse(index, reason, byIndex.get(index));
      for (const entry of list) {
        const hourMs = hourStart(entry.recordedMs);
        if (entry.recordedMs !== nowMs && hourMs + HOUR_MS <= nowMs) late.add(`${dataset}#${hourMs}`);
      }
    }
    result.invalid.sort((a, b) => a.index - b.index);
    this.logRefused('events', workspaceId, refused);
    for (const [dataset, count] of behindByDataset)
      this.metrics.refusedBehindExport(workspaceId, dataset, count);
    // One ingest slice's rows of a dataset and hour are one segment (or a few: segments.ts).
    const requests: WriteRequest[] = [];
    let rowCount = 0;
    for (const [dataset, rows] of items) {
      rowCount += rows.size;
      const segmentRows = [...rows].map(([key, line]) => ({ key, line }));
      requests.push(...segmentPutRequests(workspaceId, dataset, segmentRows, expiresAt, nowMs));
    }
    if (requests.length > 0) {
      await recordPerRowUntil(this.client, resolveTableName(this.eventsTable, 'events'), workspaceId, nowMs);
      await batchWrite(this.client, resolveTableName(this.eventsTable, 'events'), requests, this.batch);
      result.accepted += rowCount;
    }
    // After the write: a compaction that reads the mark reads these rows.
    if (this.lateHours !== undefined) {
      for (const entry of late) {
        const [dataset, hourMs] = entry.split('#') as [EventDataset, string];
        await this.lateHours.markLate(workspaceId, dataset, Number(hourMs));
      }
    }
  }

  /**
   * The export positions of the workspace when this writer checks explicit recorded times and some input of
   * the slice has one (one read per slice, none for a slice recorded now); otherwise `undefined`.
   */
  private async exportPositionsFor(
    workspaceId: string,
    inputs: readonly unknown[],
  ): Promise<ReadonlyMap<EventDataset, number> | undefined> {
    const policy = this.explicitRecordedAt;
    if (typeof policy === 'string') return undefined;
    const anyExplicit = inputs.some((input) => {
      const value = (input as { recorded_at?: unknown } | null)?.recorded_at;
      return value !== undefined && value !== null;
    });
    return anyExplicit ? policy.refuseAtOrBehind.highestPositions(workspaceId) : undefined;
  }

  /**
   * Validates and writes subscribers (the current state, one item per subscriber id; the last of a call wins).
   * Rows are the snapshot's fields without `snapshot_date`.
   */
  async upsertSubscribers(workspaceId: string, rows: readonly unknown[]): Promise<SubscriberWriteResult> {
    assertWorkspaceId(workspaceId);
    const updatedAt = new Date(this.now()).toISOString();
    const invalid: InvalidInput[] = [];
    const refused: { index: number; id?: string; reason: string }[] = [];
    const items = new Map<string, WriteRequest>();
    rows.forEach((raw, index) => {
      const parsed = parseRow('subscribers', raw);
      if (!parsed.ok) {
        invalid.push({ index, reason: parsed.reason });
        refused.push({ index, reason: parsed.reason, id: loggableId((raw as { id?: unknown } | null)?.id) });
        return;
      }
      const line = serializeRow('subscribers', parsed.row);
      if (Buffer.byteLength(line) > MAX_LINE_BYTES) {
        const reason = `(row): serialized row exceeds ${MAX_LINE_BYTES} bytes`;
        invalid.push({ index, reason });
        refused.push({ index, reason, id: parsed.row.id });
        return;
      }
      const pk = subscriberPk(workspaceId, shardOf(parsed.row.id, SUBSCRIBER_SHARDS));
      items.set(parsed.row.id, {
        PutRequest: {
          Item: { PK: { S: pk }, SK: { S: parsed.row.id }, line: { S: line }, updatedAt: { S: updatedAt } },
        },
      });
    });
    this.logRefused('subscribers', workspaceId, refused);
    const accepted =
      items.size === 0
        ? 0
        : await batchWrite(
            this.client,
            resolveTableName(this.subscribersTable, 'subscribers'),
            [...items.values()],
            this.batch,
          );
    return { accepted, invalid };
  }

  /** Deletes subscribers by id; they are absent from the next snapshot. Deleting an unknown id is not an error. */
  async deleteSubscribers(workspaceId: string, ids: readonly unknown[]): Promise<SubscriberWriteResult> {
    assertWorkspaceId(workspaceId);
    const invalid: InvalidInput[] = [];
    const items = new Map<string, WriteRequest>();
    ids.forEach((id, index) => {
      if (typeof id !== 'string' || !ID_PATTERN.test(id)) {
        invalid.push({ index, reason: 'id: must be 1 to 256 printable ASCII characters without spaces' });
        return;
      }
      const pk = subscriberPk(workspaceId, shardOf(id, SUBSCRIBER_SHARDS));
      items.set(id, { DeleteRequest: { Key: { PK: { S: pk }, SK: { S: id } } } });
    });
    this.logRefused(
      'subscriber deletes',
      workspaceId,
      invalid.map((entry) => ({ ...entry })),
    );
    const accepted =
      items.size === 0
        ? 0
        : await batchWrite(
            this.client,
            resolveTableName(this.subscribersTable, 'subscribers'),
            [...items.values()],
            this.batch,
          );
    return { accepted, invalid };
  }

  /** Logs refused inputs (positions, ids, reasons naming fields: no row values, so no PII beyond ids). */
  private logRefused(kind: string, workspaceId: string, refused: readonly object[]): void {
    if (refused.length === 0) return;
    this.logger.warn(`Refused ${refused.length} invalid ${kind}`, {
      workspaceId,
      invalidCount: refused.length,
      invalid: refused.slice(0, LOGGED_INVALID),
    });
  }
}
