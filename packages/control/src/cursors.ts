import { paginateQuery, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import {
  type Dataset,
  DATASETS,
  type Era,
  type FileFormat,
  fileFormatOf,
  type IncludedOrganization,
  isDataset,
  type Layout,
  layoutOf,
} from '@sluice/core';
import {
  type ControlTable,
  type ControlTableOptions,
  deleteKeys,
  mapDynamoError,
  resolveControlTable,
} from './client.js';
import {
  cursorSk,
  cursorSkPrefix,
  destinationSk,
  progressSk,
  progressSkPrefix,
  workspacePk,
} from './items.js';
import { fencedDestination, type Lease, type LeaseFence, LeaseStore, leaseCondition } from './leases.js';
import { type RunKey, runCountsItem } from './runs.js';
import { type TransactItem, transact } from './transactions.js';

/**
 * The export position of each (destination, dataset) and the work planned from it (docs/internals.md):
 * - the cursor item `DEST#<id>#CURSOR#<dataset>`: `exportedThroughMs` (events) or `snapshotDate`
 *   (subscribers), and the spans or snapshot planned and not yet committed;
 * - window progress items `DEST#<id>#PROGRESS#<dataset>#<window>`: how far a writer got in one window (or
 *   one day's snapshot), saved after every file, so a writer out of time, a crash or the end of an execution
 *   loses at most the file in flight, and the next invocation continues with the next file number.
 * Every write is fenced by the lease (or "no live lease", for the dispatcher) and each cursor write also by
 * the cursor's expected old position, so two executions can never both move it.
 */

type Item = Record<string, unknown>;

/** Event windows planned but not yet committed, with the run that planned them (`@sluice/core` `Span`). */
export interface PlannedSpan {
  fromMs: number;
  toMs: number;
  /** The grid step the span is cut at; absent for a single window planned by an older version. */
  stepMs?: number;
  runId: string;
  /**
   * The format its files are written in, fixed when planned. Absent on a span stored without it (a span a
   * partial run's Commit stored before Commit kept formats, or one planned before formats existed): the
   * planner reads it as the destination's format, which it was planned with unless the format changed since.
   */
  format?: FileFormat;
  /** The grid's shift (`@sluice/core` `Span.phaseMs`); absent: 0. */
  phaseMs?: number;
  /** The layout its files are named in, fixed when planned; absent: `date`. */
  layout?: Layout;
  /** The organisations its windows read, fixed when planned (`@sluice/core` `Span.organizations`); absent: none. */
  organizations?: IncludedOrganization[];
}

/** A subscriber snapshot planned but not yet complete. */
export interface PlannedSnapshot {
  date: string;
  runId: string;
  /** As {@link PlannedSpan.format}. */
  format?: FileFormat;
}

/** One dataset's cursor as stored. */
export interface CursorState {
  dataset: Dataset;
  /** Events: everything recorded through this instant is written. Absent until the first commit. */
  exportedThroughMs?: number;
  /** Subscribers: the date of the last complete snapshot. */
  snapshotDate?: string;
  /** Events: the spans planned and not committed, in order. */
  plannedSpans: PlannedSpan[];
  /** Subscribers: the snapshot planned and not complete. */
  plannedSnapshot?: PlannedSnapshot;
  /**
   * Events: the grid step and format windows were first planned with, era by era (`@sluice/core` `Era`);
   * empty or absent on a cursor stored before eras were kept.
   */
  eras?: Era[];
}

/** The value a cursor write expects to find, and the value it writes. */
export interface CursorPosition {
  exportedThroughMs?: number;
  snapshotDate?: string;
}

/** One cursor write of {@link CursorStore.savePlanned} or {@link CursorStore.advance}. */
export interface CursorWrite {
  dataset: Dataset;
  /** The position the cursor must still hold (absent fields: the cursor must not have them yet). */
  expected: CursorPosition;
  /** The new position; omit to keep the position and only replace the planned work. */
  next?: CursorPosition;
  /** The new planned work: spans for events, at most one snapshot for subscribers. */
  plannedSpans?: PlannedSpan[];
  plannedSnapshot?: PlannedSnapshot | null;
  /** The eras, when planning changed them. */
  eras?: Era[];
}

/**
 * How far the writers got in one event window or one day's snapshot. Kept until the cursor moves past it.
 * Only windows with at least one file have one: an empty window is cheap to read again.
 */
export interface WindowProgress {
  dataset: Dataset;
  /** `<fromMs>-<toMs>` of an event window, or the snapshot's date. */
  window: string;
  /** The destination's `configVersion` the files were written for: another location starts over. */
  configVersion: number;
  /** Files written so far, numbered from 0: the next file's number. */
  nextFile: number;
  /** The source position after the last line of the last file (opaque here; absent before the first file). */
  lastKey?: string;
  /**
   * The highest file number ever started for this window (-1 when none). Recorded before a file is
   * written, so a retry that ends with fewer files knows which higher-numbered leftovers to overwrite.
   */
  maxFile: number;
  /** Totals of the files written so far. */
  rows: number;
  files: number;
  bytes: number;
  /**
   * Per file number, what was written (rows, bytes, SHA-256), for the window's manifest: a window resumed by
   * a later invocation lists the files of earlier ones too. Absent on items saved before manifests existed.
   */
  fileFigures?: FileFigures[];
  /** Every file of the window is written (and, for a snapshot, `_SUCCESS`). */
  done: boolean;
  /** The run that wrote last. */
  runId: string;
}

/** What one written file of a window holds: its rows, its bytes as stored and their SHA-256 (hex). */
export interface FileFigures {
  rows: number;
  bytes: number;
  sha256: string;
}

function toFileFigures(value: unknown): FileFigures[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const figures: FileFigures[] = [];
  for (const entry of value as Item[]) {
    if (typeof entry?.rows !== 'number' || typeof entry.bytes !== 'number') return undefined;
    if (typeof entry.sha256 !== 'string') return undefined;
    figures.push({ rows: entry.rows, bytes: entry.bytes, sha256: entry.sha256 });
  }
  return figures;
}

/** The key of a progress entry in {@link CursorStore.getProgress}'s map. */
export function progressKey(dataset: Dataset, window: string): string {
  return `${dataset}#${window}`;
}

/** What fences a writer's progress: its run's lease, and the destination still wanting its files. */
export interface ProgressFence {
  lease: Pick<Lease, 'workspaceId' | 'destinationId' | 'token'>;
  /** The destination must still be enabled with this `configVersion`. */
  configVersion: number;
}

/**
 * The outcome of {@link CursorStore.saveProgress}. `already_saved`: the first entry's stored item is past
 * the `previousNextFile` of its {@link ProgressCount} (this save, or a later one, was already applied), so
 * nothing was written and nothing counted again.
 */
export type ProgressSaveOutcome = 'saved' | 'already_saved' | 'lease_lost' | 'destination_changed';

/**
 * Files a save of {@link CursorStore.saveProgress} adds to its run's record: those its first entry gained
 * since it was last saved (or read), when its `nextFile` was `previousNextFile`.
 */
export interface ProgressCount {
  run: RunKey;
  previousNextFile: number;
  rows: number;
  files: number;
  bytes: number;
}

function toCursor(dataset: Dataset, item: Item | undefined): CursorState {
  const eras: Era[] = [];
  const cursor: CursorState = { dataset, plannedSpans: [], eras };
  if (item === undefined) return cursor;
  for (const era of Array.isArray(item.eras) ? (item.eras as Item[]) : []) {
    if (typeof era.fromMs === 'number' && typeof era.stepMs === 'number') {
      eras.push({ fromMs: era.fromMs, stepMs: era.stepMs, format: fileFormatOf(era), ...gridExtras(era) });
    }
  }
  if (typeof item.exportedThroughMs === 'number') cursor.exportedThroughMs = item.exportedThroughMs;
  if (typeof item.snapshotDate === 'string') cursor.snapshotDate = item.snapshotDate;
  const planned = Array.isArray(item.planned) ? (item.planned as Item[]) : [];
  const organizations = Array.isArray(item.plannedOrganizations) ? (item.plannedOrganizations as Item[]) : [];
  for (const entry of planned) {
    const runId = typeof entry.runId === 'string' ? entry.runId : '';
    if (typeof entry.fromMs === 'number' && typeof entry.toMs === 'number') {
      const span: PlannedSpan = { fromMs: entry.fromMs, toMs: entry.toMs, runId };
      if (typeof entry.stepMs === 'number') span.stepMs = entry.stepMs;
      if (entry.format !== undefined) span.format = fileFormatOf(entry);
      Object.assign(span, gridExtras(entry));
      if (Array.isArray(entry.organizationRefs)) {
        span.organizations = (entry.organizationRefs as unknown[]).flatMap((ref) =>
          typeof ref === 'number' && organizations[ref] !== undefined
            ? toIncludedOrganization(organizations[ref])
            : [],
        );
      }
      cursor.plannedSpans.push(span);
    } else if (typeof entry.date === 'string') {
      cursor.plannedSnapshot = { date: entry.date, runId, format: fileFormatOf(entry) };
    }
  }
  return cursor;
}

/**
 * A stored span's or era's grid shift and layout, when not the defaults (0, `date`), and its organisation
 * partition: a span's organisations, an era's `partitioned`.
 */
function gridExtras(entry: Item): {
  phaseMs?: number;
  layout?: Layout;
  partitioned?: true;
  organizations?: IncludedOrganization[];
} {
  return {
    ...(typeof entry.phaseMs === 'number' && entry.phaseMs !== 0 ? { phaseMs: entry.phaseMs } : {}),
    ...(layoutOf(entry) !== 'date' ? { layout: layoutOf(entry) } : {}),
    ...(entry.partitioned === true ? { partitioned: true as const } : {}),
    ...(Array.isArray(entry.organizations)
      ? { organizations: (entry.organizations as Item[]).flatMap(toIncludedOrganization) }
      : {}),
  };
}

/**
 * The organisations of a cursor's planned spans, stored once per cursor (`plannedOrganizations`, each distinct
 * organisation with its start and stop once) and referred to by index from each span (`organizationRefs`),
 * so the cursor item stays far under DynamoDB's 400 KB when its spans read the same hundreds of children.
 * A span stored before (its own `organizations`) is read as it is.
 */
class OrganizationTable {
  readonly entries: IncludedOrganization[] = [];
  private readonly index = new Map<string, number>();

  refsOf(organizations: readonly IncludedOrganization[]): number[] {
    return organizations.map(({ id, startMs, stopMs }) => {
      const key = JSON.stringify([id, startMs, stopMs]);
      let ref = this.index.get(key);
      if (ref === undefined) {
        ref = this.entries.length;
        this.entries.push({
          id,
          ...(startMs !== undefined ? { startMs } : {}),
          ...(stopMs !== undefined ? { stopMs } : {}),
        });
        this.index.set(key, ref);
      }
      return ref;
    });
  }
}

/** A stored organisation of a planned span (`[]` when it is not one). */
function toIncludedOrganization(entry: Item): IncludedOrganization[] {
  if (typeof entry.id !== 'string') return [];
  return [
    {
      id: entry.id,
      ...(typeof entry.startMs === 'number' ? { startMs: entry.startMs } : {}),
      ...(typeof entry.stopMs === 'number' ? { stopMs: entry.stopMs } : {}),
    },
  ];
}

/** A stored window progress item, or undefined when it is not one. */
export function toProgress(item: Item): WindowProgress | undefined {
  const dataset = item.dataset;
  if (typeof dataset !== 'string' || !isDataset(dataset) || typeof item.window !== 'string') return undefined;
  const number = (value: unknown, fallback: number) => (typeof value === 'number' ? value : fallback);
  const progress: WindowProgress = {
    dataset,
    window: item.window,
    configVersion: number(item.configVersion, -1),
    nextFile: number(item.nextFile, 0),
    maxFile: number(item.maxFile, -1),
    rows: number(item.rows, 0),
    files: number(item.files, 0),
    bytes: number(item.bytes, 0),
    done: item.done === true,
    runId: typeof item.runId === 'string' ? item.runId : '',
  };
  if (typeof item.lastKey === 'string') progress.lastKey = item.lastKey;
  const fileFigures = toFileFigures(item.fileFigures);
  if (fileFigures !== undefined) progress.fileFigures = fileFigures;
  return progress;
}

/** Progress items are kept at most this long (a destination that stopped exporting leaves none for ever). */
const PROGRESS_TTL_SECONDS = 35 * 86_400;

/** The condition of a counted entry's Put: its stored item is still where the counted files began. */
function previousNextFileCondition(entry: WindowProgress, count: ProgressCount) {
  return {
    ConditionExpression:
      'attribute_not_exists(PK) OR configVersion <> :configVersion OR nextFile = :previous',
    ExpressionAttributeValues: { ':configVersion': entry.configVersion, ':previous': count.previousNextFile },
  };
}

/** Cursors and window progress. Takes `{ client?, tableName? }` like every control store. */
export class CursorStore {
  private readonly table: ControlTable;

  constructor(options: ControlTableOptions) {
    this.table = resolveControlTable(options);
  }

  /** Every cursor of the destination, one per dataset (an empty one where none is stored), consistent read. */
  async get(workspaceId: string, destinationId: string): Promise<Map<Dataset, CursorState>> {
    const prefix = cursorSkPrefix(destinationId);
    const stored = new Map<string, Item>();
    for (const item of await this.query(workspaceId, prefix)) {
      stored.set(String(item.SK).slice(prefix.length), item);
    }
    const cursors = new Map<Dataset, CursorState>();
    for (const dataset of DATASETS) cursors.set(dataset, toCursor(dataset, stored.get(dataset)));
    return cursors;
  }

  /**
   * Stores the planned work of a run before anything is written, in one transaction fenced by the lease
   * and by each cursor's expected position. Returns false when the fence or a position no longer holds.
   */
  savePlanned(fence: LeaseFence, writes: CursorWrite[], now: Date): Promise<boolean> {
    return this.write(
      fence,
      writes.map((write) => ({ ...write, next: undefined })),
      now,
    );
  }

  /**
   * Advances cursors (new position and remaining planned work) in one transaction fenced by the lease (or
   * by "no live lease", for the dispatcher) and by each cursor's expected old position, so of two
   * executions at most one moves a cursor. `alsoWrite` items (the run record's outcome) go in the same
   * transaction. Returns false when the fence, an expected position or an item's condition fails.
   */
  advance(
    fence: LeaseFence,
    writes: CursorWrite[],
    now: Date,
    alsoWrite: TransactItem[] = [],
  ): Promise<boolean> {
    return this.write(fence, writes, now, alsoWrite);
  }

  /** Every window progress of a destination, keyed by {@link progressKey}. Consistent read. */
  async getProgress(workspaceId: string, destinationId: string): Promise<Map<string, WindowProgress>> {
    const entries = new Map<string, WindowProgress>();
    for (const item of await this.query(workspaceId, progressSkPrefix(destinationId))) {
      const progress = toProgress(item);
      if (progress !== undefined) entries.set(progressKey(progress.dataset, progress.window), progress);
    }
    return entries;
  }

  /**
   * Saves a writer's progress in one transaction: only while its run holds the lease and the destination
   * is still enabled with the run's `configVersion` (a pause, a delete or a move stops the writer here,
   * before its next file). Several entries (a window's completion and the next window's first file) are
   * saved together or not at all.
   *
   * With `count`, the same transaction adds the first entry's new files to its running run record
   * ({@link runCountsItem}), and only if that entry's stored item still has `nextFile` = `previousNextFile`
   * (or is absent, or of another `configVersion`): a save applied twice counts its files once. When the run
   * record cannot take the count (missing, finished), the progress is saved without it.
   */
  async saveProgress(
    fence: ProgressFence,
    progress: WindowProgress | readonly WindowProgress[],
    now: Date,
    count?: ProgressCount,
  ): Promise<ProgressSaveOutcome> {
    const { workspaceId, destinationId } = fence.lease;
    const pk = workspacePk(workspaceId);
    const entries: readonly WindowProgress[] = Array.isArray(progress) ? progress : [progress];
    const first = entries[0];
    const counted = count !== undefined && first !== undefined && count.files > 0;
    const items: TransactItem[] = [
      leaseCondition(this.table.tableName, { lease: fence.lease }),
      {
        ConditionCheck: {
          TableName: this.table.tableName,
          Key: { PK: pk, SK: destinationSk(destinationId) },
          ConditionExpression: 'configVersion = :configVersion AND isEnabled = :true',
          ExpressionAttributeValues: { ':configVersion': fence.configVersion, ':true': true },
        },
      },
      ...entries.map((entry, index) => ({
        Put: {
          TableName: this.table.tableName,
          Item: {
            PK: pk,
            SK: progressSk(destinationId, entry.dataset, entry.window),
            ...entry,
            updatedAt: now.toISOString(),
            expiresAt: Math.floor(now.getTime() / 1000) + PROGRESS_TTL_SECONDS,
          },
          ...(index === 0 && counted ? previousNextFileCondition(entry, count) : {}),
        },
      })),
    ];
    if (counted) {
      const { run, rows, files, bytes } = count;
      items.push(runCountsItem(this.table.tableName, run, { dataset: first.dataset, rows, files, bytes }));
    }
    const outcome = await transact(this.table, items);
    if (outcome === true) return 'saved';
    if (outcome === 0) return 'lease_lost';
    if (outcome === 1) return 'destination_changed';
    if (outcome === 2 && counted) return 'already_saved';
    // Only the run record's condition is left: save the progress, uncounted.
    if (counted && outcome === items.length - 1) return this.saveProgress(fence, entries, now);
    return 'destination_changed';
  }

  /** Deletes progress entries the cursor has moved past (idempotent; a leftover is ignored and expires). */
  async deleteProgress(
    workspaceId: string,
    destinationId: string,
    entries: readonly Pick<WindowProgress, 'dataset' | 'window'>[],
  ): Promise<void> {
    const pk = workspacePk(workspaceId);
    await deleteKeys(
      this.table,
      entries.map((entry) => ({ PK: pk, SK: progressSk(destinationId, entry.dataset, entry.window) })),
    );
  }

  private async query(workspaceId: string, prefix: string): Promise<Item[]> {
    const input: QueryCommandInput = {
      TableName: this.table.tableName,
      KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
      ExpressionAttributeValues: { ':pk': workspacePk(workspaceId), ':prefix': prefix },
      ConsistentRead: true,
    };
    const items: Item[] = [];
    try {
      for await (const page of paginateQuery({ client: this.table.client }, input)) {
        items.push(...(page.Items ?? []));
      }
    } catch (error) {
      mapDynamoError(error);
    }
    return items;
  }

  private async write(
    fence: LeaseFence,
    writes: CursorWrite[],
    now: Date,
    alsoWrite: TransactItem[] = [],
  ): Promise<boolean> {
    if (writes.length === 0 && alsoWrite.length === 0) return this.fenceHolds(fence);
    const { workspaceId, destinationId } = fencedDestination(fence);
    const pk = workspacePk(workspaceId);
    const items: TransactItem[] = [leaseCondition(this.table.tableName, fence)];
    for (const write of writes) items.push(this.cursorUpdate(pk, destinationId, write, now));
    items.push(...alsoWrite);
    return (await transact(this.table, items)) === true;
  }

  /** With nothing to write, the fence alone decides, from a consistent read of the lease. */
  private fenceHolds(fence: LeaseFence): Promise<boolean> {
    return new LeaseStore({ client: this.table.client, tableName: this.table.tableName }).holds(fence);
  }

  private cursorUpdate(pk: string, destinationId: string, write: CursorWrite, now: Date): TransactItem {
    const names: Record<string, string> = { '#dataset': 'dataset', '#updatedAt': 'updatedAt' };
    const values: Record<string, unknown> = { ':dataset': write.dataset, ':updatedAt': now.toISOString() };
    const sets = ['#dataset = :dataset', '#updatedAt = :updatedAt'];
    const removes: string[] = [];
    const conditions: string[] = [];
    for (const field of ['exportedThroughMs', 'snapshotDate'] as const) {
      names[`#${field}`] = field;
      const expected = write.expected[field];
      if (expected === undefined) conditions.push(`attribute_not_exists(#${field})`);
      else {
        values[`:old_${field}`] = expected;
        conditions.push(`#${field} = :old_${field}`);
      }
      const next = write.next?.[field];
      if (next !== undefined) {
        values[`:new_${field}`] = next;
        sets.push(`#${field} = :new_${field}`);
      }
    }
    const planned: Item[] = [];
    const organizations = new OrganizationTable();
    let touchesPlanned = false;
    if (write.plannedSpans !== undefined) {
      touchesPlanned = true;
      for (const span of write.plannedSpans) {
        const { organizations: included, ...extras } = gridExtras(span as unknown as Item);
        planned.push({
          fromMs: span.fromMs,
          toMs: span.toMs,
          ...(span.stepMs !== undefined ? { stepMs: span.stepMs } : {}),
          runId: span.runId,
          ...(span.format !== undefined ? span.format : {}),
          ...extras,
          ...(included !== undefined ? { organizationRefs: organizations.refsOf(included) } : {}),
        });
      }
    }
    if (write.plannedSnapshot !== undefined) {
      touchesPlanned = true;
      if (write.plannedSnapshot !== null) {
        const { date, runId, format } = write.plannedSnapshot;
        planned.push({ date, runId, ...(format !== undefined ? format : {}) });
      }
    }
    if (write.eras !== undefined) {
      names['#eras'] = 'eras';
      values[':eras'] = write.eras.map((era) => ({
        fromMs: era.fromMs,
        stepMs: era.stepMs,
        ...era.format,
        ...gridExtras(era as unknown as Item),
      }));
      sets.push('#eras = :eras');
    }
    if (touchesPlanned) {
      names['#planned'] = 'planned';
      if (planned.length > 0) {
        values[':planned'] = planned;
        sets.push('#planned = :planned');
      } else {
        removes.push('#planned');
      }
      names['#plannedOrganizations'] = 'plannedOrganizations';
      if (organizations.entries.length > 0) {
        values[':plannedOrganizations'] = organizations.entries;
        sets.push('#plannedOrganizations = :plannedOrganizations');
      } else {
        removes.push('#plannedOrganizations');
      }
    }
    return {
      Update: {
        TableName: this.table.tableName,
        Key: { PK: pk, SK: cursorSk(destinationId, write.dataset) },
        UpdateExpression: `SET ${sets.join(', ')}${removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''}`,
        ConditionExpression: conditions.join(' AND '),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      },
    };
  }
}
