/**
 * The simulation's own record of what was ingested and configured: the oracle's expectations come from here and
 * from the bucket only, never from the engine's functions or tables.
 */
import {
  CATALOG,
  type EventDataset,
  type ExportFormat,
  FIRST_PRODUCT_EVENT_DATASETS,
  type Frequency,
  type Layout,
  type Schedule,
} from '@sluice/core';

/** One row the simulation sent to ingest. */
export interface ModelRow {
  workspace: number;
  dataset: EventDataset;
  recordedMs: number;
  /** Refused at ingest (an import at or behind an export's position): accounted for, never expected. */
  refused: boolean;
  /** The person the row names: its `subscriber_id`, and its addresses (`email`, `properties.email`), lower case. */
  subscriberId?: string | null;
  emails?: string[];
  /** When an erasure removed it: accounted for, never expected, and in no file written after. */
  erasedMs?: number;
  /**
   * When it was first seen unavailable ({@link Model.isAvailable}) before a Dispatch tick: an export that passed
   * it then reported it expired, so it is accounted for, even if a later compaction's archive reaches it again.
   */
  lapsedMs?: number;
  /**
   * A row of a current-row dataset (`message_events`, `project_summary`): the message's (project's) id. Its
   * {@link Model.rows} id is {@link fileRowId}'s: `<message_id>@<updated_at ms>` per emission, the project id.
   */
  key?: string;
  /** A `message_events` emission's `updated_at` (epoch ms) and `status`. */
  updatedMs?: number;
  status?: string;
}

/**
 * The oracle's identity of a row in a file, from the file's own columns (the second product's files carry no
 * `id`): the first product's `id`; a `message_events` row's `<message_id>@<updated_at ms>` (one message goes
 * out once per status change); the catalogue's natural key of the other second-product datasets (click id,
 * opt-out id, project id).
 */
export function fileRowId(dataset: EventDataset, row: Record<string, unknown>): string {
  if ((FIRST_PRODUCT_EVENT_DATASETS as readonly string[]).includes(dataset)) return String(row.id);
  const key = String(row[idFieldOf(dataset)]);
  return dataset === 'message_events' ? `${key}@${msOf(row.updated_at)}` : key;
}

/** The columns {@link fileRowId} reads. */
export function idColumnsOf(dataset: EventDataset): string[] {
  if ((FIRST_PRODUCT_EVENT_DATASETS as readonly string[]).includes(dataset)) return ['id'];
  return dataset === 'message_events' ? ['message_id', 'updated_at'] : [idFieldOf(dataset)];
}

/** The natural key column of a second-product dataset, from the catalogue. */
export function idFieldOf(dataset: EventDataset): string {
  return String((CATALOG[dataset] as { idField?: string }).idField);
}

/** Epoch ms of a time column as JSON lines (ISO text) or Parquet (a `Date`, or a number) give it. */
export function msOf(value: unknown): number | string {
  if (value instanceof Date) return value.getTime();
  if (typeof value === 'number' || typeof value === 'bigint') return Number(value);
  if (typeof value === 'string') return Date.parse(value);
  return '-';
}

/** The person fields of a generated event, as {@link ModelRow} keeps them. */
export function personOf(event: Record<string, unknown>): Pick<ModelRow, 'subscriberId' | 'emails'> {
  const properties = (event.properties ?? {}) as Record<string, unknown>;
  const emails = [event.email, properties.email]
    .filter((email): email is string => typeof email === 'string')
    .map((email) => email.toLowerCase());
  return { subscriberId: typeof event.subscriber_id === 'string' ? event.subscriber_id : null, emails };
}

/** A dataset's membership of an export: from `addedMs` (exclusive) to `removedMs` (inclusive, open when absent). */
export interface Membership {
  addedMs: number;
  removedMs?: number;
}

/** A backfill the simulation asked for. */
export interface ModelBackfill {
  id: string;
  datasets: EventDataset[];
  /** The recorded-time range asked for: `[fromMs, toMs)` (a full history: from 0 to its creation). */
  fromMs: number;
  toMs: number;
  createdMs: number;
  /** The export's frequency when it was asked for: the grid its range is cut on. */
  frequency: Frequency;
  cancelled: boolean;
}

/** An export's `run_hour` or `date` layout and its `schedule` since a time (its configurations, ascending). */
export interface ModelConfig {
  sinceMs: number;
  layout: Layout;
  frequency: Frequency;
  schedule: Schedule | null;
}

/** A link of workspace `child` under `parent` (issue 27), as the operator made it: `(linkedMs, unlinkedMs]`. */
export interface ModelLink {
  parent: number;
  child: number;
  linkedMs: number;
  unlinkedMs?: number;
}

/** A child on an export's `childOrganizations`: `(addedMs, removedMs]` (open while it is listed). */
export interface ModelListing {
  child: number;
  childId: string;
  addedMs: number;
  removedMs?: number;
}

/** One export as the simulation configured it. */
export interface ModelExport {
  /** The simulation's own number for it. */
  ref: number;
  workspace: number;
  /** The workspace's id: the `organization_id` of its `run_hour` file names. */
  workspaceId: string;
  id: string;
  /** Its path prefix now; {@link prefixes}: every one it had, in order (files stay where they were written). */
  prefix: string;
  prefixes: string[];
  createdMs: number;
  /**
   * The earliest start the contract allows: `startFrom`, else the creation time; in `run_hour`, up to two
   * windows earlier (its first window is whole: the one holding `startFrom`, or the last one ended at creation).
   */
  startMs: number;
  /** From when every row is owed: `startFrom`, else the creation time. */
  dueFromMs: number;
  frequency: Frequency;
  /** Every frequency it has had. */
  frequencies: Set<Frequency>;
  /** Its format since each time (ascending). */
  formats: { sinceMs: number; format: ExportFormat }[];
  /** Its layout, frequency and schedule since each time (ascending). */
  configs: ModelConfig[];
  /**
   * The run offset (`nextRunAt` modulo the period) seen per frequency while it had no schedule: the spread
   * slot of its id, which must stay the same after every run.
   */
  spreadOffsets: Map<Frequency, number>;
  memberships: Map<EventDataset, Membership[]>;
  enabled: boolean;
  deleted: boolean;
  backfills: ModelBackfill[];
  /** Its `childOrganizations` over time (absent: never set). */
  children?: ModelListing[];
}

/** Everything the simulation did that the oracle needs. */
export class Model {
  readonly rows = new Map<string, ModelRow>();
  readonly exports: ModelExport[] = [];
  /** Row ids the event archive holds (read from the archive bucket after each compaction). */
  readonly archived = new Set<string>();
  /**
   * The end of the last hour the compactions archived (the latest compaction's time less its 10-minute settling,
   * down to the hour), or undefined before the first.
   */
  archiveThroughMs: number | undefined;
  /** The first hour the archive holds (the first compaction's hot horizon, down to the hour). */
  archiveStartMs: number | undefined;
  /**
   * Each message's current state as the simulation sent it, by `<workspace>/<message_id>`, with when it last
   * changed: Sluice keeps a message's state for the hot retention after its last change, then forgets it (a
   * whole row is then a new message, a change an unknown one).
   */
  readonly messages = new Map<
    string,
    { status: string; updatedMs: number; row: Record<string, unknown>; changedMs: number }
  >();
  /** Projects sent complete, by `<workspace>/<project_id>`, and the row each was sent with. */
  readonly completedProjects = new Set<string>();
  readonly projectRows = new Map<string, Record<string, unknown>>();
  /** Rows of current-row datasets by `<workspace>/<dataset>/<key>`: each message's emissions. */
  private readonly byKey = new Map<string, Map<string, ModelRow>>();
  /** Every link the operator made between the workspaces (kept after an unlink). */
  readonly links: ModelLink[] = [];
  /** Faults injected so far, by kind. */
  readonly faults = new Map<string, number>();

  /**
   * Whether a row can still be exported at `nowMs`: in the hot log with a day to spare (the expiry horizon may
   * be rounded to a day), or archived while the archive reaches the hot log's horizon (with an hour to spare).
   * An archive that stopped before the horizon is not read: the rows between them are gone, so the export
   * reports the expired stretch instead of delivering the archived hours before it (docs/internals.md, the
   * export contract, "Nothing lost"; core `earliestAvailableMs`).
   */
  isAvailable(id: string, recordedMs: number, nowMs: number, retentionMs: number): boolean {
    if (recordedMs > nowMs - retentionMs + 86_400_000) return true;
    return (
      this.archived.has(id) &&
      this.archiveThroughMs !== undefined &&
      this.archiveThroughMs > nowMs - retentionMs + 3_600_000
    );
  }

  /** Marks the rows unavailable at `nowMs` (called before each Dispatch tick). */
  markLapsed(nowMs: number, retentionMs: number): void {
    for (const [id, row] of this.rows) {
      if (row.lapsedMs === undefined && !this.isAvailable(id, row.recordedMs, nowMs, retentionMs))
        row.lapsedMs = nowMs;
    }
  }

  currentDatasets(exp: ModelExport): EventDataset[] {
    return [...exp.memberships].filter(([, list]) => list.at(-1)?.removedMs === undefined).map(([d]) => d);
  }

  liveExports(): ModelExport[] {
    return this.exports.filter((exp) => !exp.deleted);
  }

  /** The formats the export had at any time in `[fromMs, toMs]`. */
  formatsDuring(exp: ModelExport, fromMs: number, toMs: number): Set<ExportFormat> {
    const held = new Set<ExportFormat>();
    exp.formats.forEach((entry, index) => {
      const until = exp.formats[index + 1]?.sinceMs ?? Number.POSITIVE_INFINITY;
      if (entry.sinceMs <= toMs && until >= fromMs) held.add(entry.format);
    });
    return held;
  }

  /**
   * The rows an erasure of `target` in `workspace` removes, by the contract (docs/internals.md, erasure): rows
   * of any dataset naming the person's subscriber ids or addresses, where e-mail rows link an id to an address
   * (both ways, to a fixed point). Only rows the erasure can reach count: those of the hot log's searched days
   * (the retention plus the three days TTL takes) and archived ones; rows older than that are unavailable anyway.
   */
  personRows(
    workspace: number,
    target: { subscriberId: string } | { email: string },
    reachable: (id: string, row: ModelRow) => boolean,
  ): string[] {
    const ids = new Set<string>('subscriberId' in target ? [target.subscriberId] : []);
    const emails = new Set<string>('email' in target ? [target.email.toLowerCase()] : []);
    const rows = [...this.rows].filter(([id, row]) => row.workspace === workspace && reachable(id, row));
    const belongs = (row: ModelRow) =>
      (row.subscriberId != null && ids.has(row.subscriberId)) ||
      (row.emails ?? []).some((e) => emails.has(e));
    for (let learned = true; learned; ) {
      learned = false;
      for (const [, row] of rows) {
        if (row.dataset !== 'email_events' || !belongs(row)) continue;
        if (row.subscriberId != null && !ids.has(row.subscriberId)) {
          ids.add(row.subscriberId);
          learned = true;
        }
        for (const email of row.emails ?? []) {
          if (!emails.has(email)) {
            emails.add(email);
            learned = true;
          }
        }
      }
    }
    return rows.filter(([, row]) => belongs(row)).map(([id]) => id);
  }

  /** Records a row (indexed by its key when it has one). */
  addRow(id: string, row: ModelRow): void {
    this.rows.set(id, row);
    if (row.key === undefined) return;
    const index = `${row.workspace}/${row.dataset}/${row.key}`;
    const rows = this.byKey.get(index) ?? new Map<string, ModelRow>();
    rows.set(id, row);
    this.byKey.set(index, rows);
  }

  /** The rows of one message (project), by id. */
  rowsOfKey(workspace: number, dataset: EventDataset, key: string): Map<string, ModelRow> {
    return this.byKey.get(`${workspace}/${dataset}/${key}`) ?? new Map();
  }

  /** The layouts the export had at any time in `[fromMs, toMs]`. */
  layoutsDuring(exp: ModelExport, fromMs: number, toMs: number): Set<Layout> {
    const held = new Set<Layout>();
    exp.configs.forEach((entry, index) => {
      const until = exp.configs[index + 1]?.sinceMs ?? Number.POSITIVE_INFINITY;
      if (entry.sinceMs <= toMs && until >= fromMs) held.add(entry.layout);
    });
    return held;
  }

  /**
   * Whether `exp` owes the rows of workspace `workspace` recorded at `recordedMs`: its own workspace's always;
   * another's while that one was both linked as a child of the export's workspace and on the export's list
   * (after the later of the link and the listing, through the earlier of the unlink and the removal).
   */
  includesRowsOf(exp: ModelExport, workspace: number, recordedMs: number): boolean {
    if (workspace === exp.workspace) return true;
    const within = (fromMs: number, toMs: number | undefined) =>
      recordedMs > fromMs && (toMs === undefined || recordedMs <= toMs);
    return (
      this.links.some(
        (link) =>
          link.parent === exp.workspace && link.child === workspace && within(link.linkedMs, link.unlinkedMs),
      ) && (exp.children ?? []).some((c) => c.child === workspace && within(c.addedMs, c.removedMs))
    );
  }

  countFault(kind: string): void {
    this.faults.set(kind, (this.faults.get(kind) ?? 0) + 1);
  }
}
