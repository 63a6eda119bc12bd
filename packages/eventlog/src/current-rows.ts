/**
 * The current-row datasets (`message_events`, `project_summary`): each message's (project's) current row, kept
 * in the event log table beside the rows, and the rows they emit into the event log (docs/internals.md,
 * "Current-row datasets"). The decisions are `@sluice/core`'s (`applyMessageInput`, `decideProject`); this
 * module reads the states, applies the inputs of one ingest call in order (per key), and writes the new states
 * of up to 32 keys and the segments of their emitted rows in one transaction, conditional on each state it
 * read: two ingests racing on one message cannot lose a newer state (the loser reads again and decides
 * again), and a crash never leaves a state without its row or a row without its state.
 *
 * State items (events table): `PK = <workspaceId>#<dataset>#state#<shard>`, `SK = <message_id | project_id>`,
 * `row` (the current row as JSON), `version` (number, +1 a write), and for messages `expiresAt` (the last
 * change's recorded time + the hot retention). A project's item marks it exported complete; it has no
 * expiry. Emitted rows are stored in segments like any row (segments.ts, position
 * `<recordedAtMs>#<key>@<updated_at ms>`), so readers, the archive compaction, erasure and TTL treat them alike.
 */
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  DeleteItemCommand,
  GetItemCommand,
  type Put,
  PutItemCommand,
  QueryCommand,
  type TransactWriteItem,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import {
  applyMessageInput,
  CATALOG,
  type CurrentRow,
  type Dataset,
  decideProject,
  emissionId,
  currentRowKeyOf,
  ID_PATTERN,
  type ParseCurrentRow,
  parseRow,
  serializeRow,
  SluiceError,
} from '@sluice/core';
import { defaultEventLogClient, resolveRetentionSeconds, resolveTableName } from './client.js';
import { assertWorkspaceId, EVENT_SHARDS, eventSk, shardOf } from './keys.js';
import { recordPerRowUntil } from './per-row-until.js';
import { type SegmentRow, segmentPutRequests } from './segments.js';

/** How a current-row dataset decides: a message's changes, or a project's completion. */
export type CurrentRowKind = 'message' | 'project';

/** What the store needs to know of a current-row dataset (the catalogue's module gives it). */
export interface CurrentRowSpec {
  dataset: string;
  kind: CurrentRowKind;
  /** The field that identifies the row: `message_id`, `project_id`. */
  keyField: string;
  /** The dataset's row schema, applied to whole rows. */
  parse: ParseCurrentRow;
  /**
   * The event log line of an emitted row: the row, with Sluice's own row id (`<key>@<updated_at ms>`, also in
   * the item's sort key) and its recorded time when the dataset's lines carry them.
   */
  serialize: (row: CurrentRow, recordedMs: number, id: string) => string;
}

/** One input of an ingest call: its position in the call, the producer's fields, its recorded time. */
export interface CurrentRowInput {
  index: number;
  fields: Readonly<Record<string, unknown>>;
  recordedMs: number;
}

/** What {@link CurrentRowStore.ingest} did with the inputs it did not refuse. */
export interface CurrentRowCounts {
  /** Rows emitted into the event log (exported in the window holding their recorded time). */
  emitted: number;
  /** Changes kept in the current row without emitting it (no status change). */
  kept: number;
  /** Changes whose `updated_at` was at or before the current row's: ignored. */
  outOfOrder: number;
  /** Projects received not complete (draft, scheduled, in progress): not emitted. */
  notComplete: number;
  /** Projects received again after they were emitted complete: not emitted. */
  afterCompletion: number;
}

/** The outcome of {@link CurrentRowStore.ingest}. */
export interface CurrentRowOutcome {
  counts: CurrentRowCounts;
  refused: { index: number; reason: string }[];
}

/** Options of {@link CurrentRowStore}. */
export interface CurrentRowStoreOptions {
  /** @default the module-level client */
  client?: DynamoDBClient;
  /** The event log table: state items and emitted rows. */
  eventsTable: string;
  /** Seconds an emitted row (and a message's state after its last change) is kept. @default 35 days */
  retentionSeconds?: number;
  /** Messages decided and written at once. @default 8 */
  concurrency?: number;
  /** Reads and writes of one message before a conflict is given up. @default 8 */
  maxAttempts?: number;
  /** The clock (epoch ms) deciding whether a message's state has expired. @default Date.now */
  now?: () => number;
}

/** A write of a message's state lost to concurrent writes more often than the attempts allowed. */
export class CurrentRowConflictError extends SluiceError {
  override readonly retryable = true;
}

/** Keys whose states one transaction writes. */
const MAX_KEYS_PER_WRITE = 32;
/** Inputs one transaction decides (each emits at most one row, so at most this many segments). */
const MAX_INPUTS_PER_WRITE = 64;

export function emptyCurrentRowCounts(): CurrentRowCounts {
  return { emitted: 0, kept: 0, outOfOrder: 0, notComplete: 0, afterCompletion: 0 };
}

/** The partition key of a dataset's state items in one shard. */
export function currentRowPk(workspaceId: string, dataset: string, shard: number): string {
  return `${workspaceId}#${dataset}#state#${shard}`;
}

interface StoredState {
  row: CurrentRow;
  version: number;
}

/** The decisions of one attempt on one key: the new state (if any), the rows to emit, the counts. */
interface Attempt {
  next: CurrentRow | undefined;
  emissions: { recordedMs: number; row: CurrentRow }[];
  counts: CurrentRowCounts;
  refused: { index: number; reason: string }[];
  lastRecordedMs: number;
}

/** Keeps and emits the current rows of the current-row datasets. */
export class CurrentRowStore {
  private readonly client: DynamoDBClient;
  private readonly table: string;
  private readonly retentionSeconds: number;
  private readonly concurrency: number;
  private readonly maxAttempts: number;
  private readonly now: () => number;

  constructor(options: CurrentRowStoreOptions) {
    this.client = options.client ?? defaultEventLogClient();
    this.table = resolveTableName(options.eventsTable, 'events');
    this.retentionSeconds = resolveRetentionSeconds(options.retentionSeconds);
    this.concurrency = options.concurrency ?? 8;
    this.maxAttempts = options.maxAttempts ?? 8;
    this.now = options.now ?? Date.now;
  }

  /**
   * Applies inputs of one dataset of one workspace, in their order (per key), to the current rows: writes
   * the new states and the emitted rows, and says what happened to each input. Refused inputs change nothing.
   * Safe to retry: an input already applied is then out of order (a message) or after completion (a project).
   */
  async ingest(
    workspaceId: string,
    spec: CurrentRowSpec,
    inputs: readonly CurrentRowInput[],
  ): Promise<CurrentRowOutcome> {
    assertWorkspaceId(workspaceId);
    const outcome: CurrentRowOutcome = { counts: emptyCurrentRowCounts(), refused: [] };
    const groups = new Map<string, CurrentRowInput[]>();
    for (const input of inputs) {
      const key = input.fields[spec.keyField];
      if (typeof key !== 'string' || !ID_PATTERN.test(key)) {
        outcome.refused.push({
          index: input.index,
          reason: `${spec.keyField}: must be 1 to 256 printable ASCII characters without spaces`,
        });
        continue;
      }
      const group = groups.get(key) ?? [];
      group.push(input);
      groups.set(key, group);
    }
    const jobs = writeJobs([...groups.entries()]);
    const next = { index: 0 };
    const worker = async () => {
      while (next.index < jobs.length) {
        // A job's writes run in order: a message with more inputs than one write holds is applied in parts.
        for (const write of jobs[next.index++] as Entry[][]) {
          for (const done of await this.applyWrite(workspaceId, spec, write)) {
            for (const name of Object.keys(done.counts) as (keyof CurrentRowCounts)[])
              outcome.counts[name] += done.counts[name];
            outcome.refused.push(...done.refused);
          }
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.concurrency, jobs.length) }, worker));
    outcome.refused.sort((a, b) => a.index - b.index);
    return outcome;
  }

  /** The current row Sluice holds for a key, if any (strongly consistent). */
  async current(workspaceId: string, dataset: string, key: string): Promise<CurrentRow | undefined> {
    return (await this.read(workspaceId, dataset, key))?.row;
  }

  /**
   * Deletes the state items of a dataset whose current row `belongsTo` says is the person's (erasure).
   * Returns how many were deleted.
   */
  async erase(
    workspaceId: string,
    dataset: string,
    belongsTo: (row: CurrentRow) => boolean,
  ): Promise<number> {
    assertWorkspaceId(workspaceId);
    let deleted = 0;
    for (let shard = 0; shard < EVENT_SHARDS; shard++) {
      let startKey: Record<string, AttributeValue> | undefined;
      do {
        const page = await this.client.send(
          new QueryCommand({
            TableName: this.table,
            KeyConditionExpression: 'PK = :pk',
            ExpressionAttributeValues: { ':pk': { S: currentRowPk(workspaceId, dataset, shard) } },
            ProjectionExpression: 'PK, SK, #row',
            ExpressionAttributeNames: { '#row': 'row' },
            ConsistentRead: true,
            ...(startKey ? { ExclusiveStartKey: startKey } : {}),
          }),
        );
        for (const item of page.Items ?? []) {
          const row = JSON.parse(item.row?.S ?? '{}') as CurrentRow;
          if (!belongsTo(row)) continue;
          await this.client.send(
            new DeleteItemCommand({
              TableName: this.table,
              Key: { PK: item.PK as AttributeValue, SK: item.SK as AttributeValue },
            }),
          );
          deleted++;
        }
        startKey = page.LastEvaluatedKey;
      } while (startKey !== undefined);
    }
    return deleted;
  }

  private stateKey(workspaceId: string, dataset: string, key: string): Record<string, AttributeValue> {
    return { PK: { S: currentRowPk(workspaceId, dataset, shardOf(key, EVENT_SHARDS)) }, SK: { S: key } };
  }

  private async read(workspaceId: string, dataset: string, key: string): Promise<StoredState | undefined> {
    const output = await this.client.send(
      new GetItemCommand({
        TableName: this.table,
        Key: this.stateKey(workspaceId, dataset, key),
        ConsistentRead: true,
      }),
    );
    const item = output.Item;
    if (item === undefined) return undefined;
    // A message state past its expiry is absent, as TTL will make it.
    const expiresAt = item.expiresAt?.N;
    if (expiresAt !== undefined && Number(expiresAt) * 1000 < this.now()) return undefined;
    return { row: JSON.parse(item.row?.S ?? '{}') as CurrentRow, version: Number(item.version?.N ?? '0') };
  }

  /**
   * Reads the states of a write's keys, decides their inputs, writes; again from the reads when another write
   * came first (nothing of a lost write is stored, so every key is decided again).
   */
  private async applyWrite(
    workspaceId: string,
    spec: CurrentRowSpec,
    write: readonly Entry[],
  ): Promise<Pick<Attempt, 'counts' | 'refused'>[]> {
    for (let attempt = 1; ; attempt++) {
      const stored = await Promise.all(write.map(({ key }) => this.read(workspaceId, spec.dataset, key)));
      const decided = write.map(({ group }, i) => decide(spec, stored[i]?.row, group));
      if (decided.every((d) => d.next === undefined)) return decided;
      try {
        await this.write(workspaceId, spec, write, stored, decided);
        return decided;
      } catch (error) {
        if (!isLostRace(error)) throw error;
        if (attempt >= this.maxAttempts) {
          throw new CurrentRowConflictError(
            `${spec.dataset}: the current row of one ${spec.keyField} changed under ${attempt} attempts to write it; retry`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * attempt));
      }
    }
  }

  /**
   * The new states of a write's keys and the segments of their emitted rows, in one transaction conditional
   * on each state read: a state and its emitted rows are stored together or not at all.
   */
  private async write(
    workspaceId: string,
    spec: CurrentRowSpec,
    write: readonly Entry[],
    stored: readonly (StoredState | undefined)[],
    decided: readonly Attempt[],
  ): Promise<void> {
    const items: TransactWriteItem[] = [];
    const emitted: SegmentRow[] = [];
    write.forEach(({ key }, i) => {
      const next = decided[i]!;
      if (next.next === undefined) return;
      items.push({ Put: this.statePut(workspaceId, spec, key, stored[i], next) });
      for (const { recordedMs, row } of next.emissions) {
        const id = emissionId(key, row);
        emitted.push({ key: eventSk(recordedMs, id), line: spec.serialize(row, recordedMs, id) });
      }
    });
    const expiresAt = (recordedMs: number) => Math.floor(recordedMs / 1000) + this.retentionSeconds;
    const segments = segmentPutRequests(workspaceId, spec.dataset as Dataset, emitted, expiresAt, this.now());
    for (const request of segments)
      items.push({ Put: { TableName: this.table, Item: request.PutRequest!.Item! } });
    if (segments.length > 0) await recordPerRowUntil(this.client, this.table, workspaceId, this.now());
    if (items.length === 1) {
      await this.client.send(new PutItemCommand(items[0]!.Put!));
      return;
    }
    await this.client.send(new TransactWriteItemsCommand({ TransactItems: items }));
  }

  /** The Put of a key's new state, conditional on the state read (none, or an expired one: absent). */
  private statePut(
    workspaceId: string,
    spec: CurrentRowSpec,
    key: string,
    stored: StoredState | undefined,
    decided: Attempt,
  ): Put {
    const state: Record<string, AttributeValue> = {
      ...this.stateKey(workspaceId, spec.dataset, key),
      row: { S: JSON.stringify(decided.next) },
      version: { N: String((stored?.version ?? 0) + 1) },
    };
    if (spec.kind === 'message') {
      state.expiresAt = { N: String(Math.floor(decided.lastRecordedMs / 1000) + this.retentionSeconds) };
    }
    return stored === undefined
      ? {
          TableName: this.table,
          Item: state,
          ConditionExpression: 'attribute_not_exists(PK) OR #expiresAt < :nowSeconds',
          ExpressionAttributeNames: { '#expiresAt': 'expiresAt' },
          ExpressionAttributeValues: { ':nowSeconds': { N: String(Math.floor(this.now() / 1000)) } },
        }
      : {
          TableName: this.table,
          Item: state,
          ConditionExpression: 'version = :version',
          ExpressionAttributeValues: { ':version': { N: String(stored.version) } },
        };
  }
}

/** One key's inputs of one write. */
interface Entry {
  key: string;
  group: CurrentRowInput[];
}

/**
 * The writes of an ingest call's keys, as jobs (the writes of a job run in order; jobs run at once): keys packed
 * into writes of at most {@link MAX_KEYS_PER_WRITE} keys and {@link MAX_INPUTS_PER_WRITE} inputs; a key with more
 * inputs is a job of its own, its inputs in parts, in order. A write's transaction then holds at most 32 states
 * and 64 segments (a segment holds at least one emitted row, an input emits at most one): within DynamoDB's 100.
 */
function writeJobs(work: readonly [string, CurrentRowInput[]][]): Entry[][][] {
  const jobs: Entry[][][] = [];
  let packed: Entry[] = [];
  let packedInputs = 0;
  for (const [key, group] of work) {
    if (group.length > MAX_INPUTS_PER_WRITE) {
      const parts: Entry[][] = [];
      for (let at = 0; at < group.length; at += MAX_INPUTS_PER_WRITE)
        parts.push([{ key, group: group.slice(at, at + MAX_INPUTS_PER_WRITE) }]);
      jobs.push(parts);
      continue;
    }
    if (packed.length === MAX_KEYS_PER_WRITE || packedInputs + group.length > MAX_INPUTS_PER_WRITE) {
      jobs.push([packed]);
      packed = [];
      packedInputs = 0;
    }
    packed.push({ key, group });
    packedInputs += group.length;
  }
  if (packed.length > 0) jobs.push([packed]);
  return jobs;
}

/** Applies a key's inputs in order to its current row (pure). */
function decide(
  spec: CurrentRowSpec,
  current: CurrentRow | undefined,
  group: readonly CurrentRowInput[],
): Attempt {
  const attempt: Attempt = {
    next: undefined,
    emissions: [],
    counts: emptyCurrentRowCounts(),
    refused: [],
    lastRecordedMs: 0,
  };
  let row = current;
  for (const input of group) {
    if (spec.kind === 'message') {
      const decision = applyMessageInput(row, input.fields, spec.parse);
      if (decision.kind === 'refused') attempt.refused.push({ index: input.index, reason: decision.reason });
      else if (decision.kind === 'out_of_order') attempt.counts.outOfOrder++;
      else {
        row = decision.row;
        attempt.next = row;
        attempt.lastRecordedMs = Math.max(attempt.lastRecordedMs, input.recordedMs);
        if (decision.emit) {
          attempt.emissions.push({ recordedMs: input.recordedMs, row });
          attempt.counts.emitted++;
        } else attempt.counts.kept++;
      }
      continue;
    }
    const parsed = spec.parse(input.fields);
    if (!parsed.ok) {
      attempt.refused.push({ index: input.index, reason: parsed.reason });
      continue;
    }
    const decision = decideProject(parsed.row, row !== undefined);
    if (decision.kind === 'not_complete') attempt.counts.notComplete++;
    else if (decision.kind === 'after_completion') attempt.counts.afterCompletion++;
    else {
      row = parsed.row;
      attempt.next = row;
      attempt.lastRecordedMs = input.recordedMs;
      attempt.emissions.push({ recordedMs: input.recordedMs, row });
      attempt.counts.emitted++;
    }
  }
  return attempt;
}

/** True when a conditional write lost to another write of the same state (read again and decide again). */
function isLostRace(error: unknown): boolean {
  if (error instanceof ConditionalCheckFailedException) return true;
  const candidate = error as { name?: string; CancellationReasons?: { Code?: string }[] };
  return (
    candidate?.name === 'TransactionCanceledException' &&
    (candidate.CancellationReasons ?? []).some(
      (reason) => reason.Code === 'ConditionalCheckFailed' || reason.Code === 'TransactionConflict',
    )
  );
}

/**
 * The {@link CurrentRowSpec} of a current-row dataset for one workspace: the dataset's row schema (`parseRow`
 * of `@sluice/core`) applied to whole rows, the stored row without Sluice's `id` and `recorded_at` (given
 * again to each emitted line: the emission's id and recorded time).
 */
export function currentRowSpecOf(dataset: string, workspaceId: string): CurrentRowSpec {
  const keyField = currentRowKeyOf(dataset);
  if (keyField === undefined) throw new Error(`${dataset} is not a current-row dataset`);
  // The column Sluice fills with the owning workspace, whatever the producer sent.
  const ownerField = CATALOG[dataset as Dataset].ownerField;
  const owner = ownerField === undefined ? {} : { [ownerField]: workspaceId };
  return {
    dataset,
    kind: CATALOG[dataset as Dataset].semantics === 'once' ? 'project' : 'message',
    keyField,
    parse: (input) => {
      const parsed = parseRow(dataset as Dataset, { ...(input as object), ...owner, recorded_at: 0 });
      if (!parsed.ok) return parsed;
      const { id: _id, recorded_at: _recordedAt, ...row } = parsed.row as Record<string, unknown>;
      return { ok: true, row };
    },
    serialize: (row, recordedMs, id) =>
      serializeRow(
        dataset as Dataset,
        { ...row, id, recorded_at: new Date(recordedMs).toISOString() } as never,
      ),
  };
}
