/**
 * The simulation's own record of what was ingested and configured: the oracle's expectations come from here and
 * from the bucket only, never from the engine's functions or tables.
 */
import type { EventDataset, ExportFormat, Frequency } from '@sluice/core';

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

/** One export as the simulation configured it. */
export interface ModelExport {
  /** The simulation's own number for it. */
  ref: number;
  workspace: number;
  id: string;
  prefix: string;
  createdMs: number;
  /** `startFrom`, else the creation time. */
  startMs: number;
  frequency: Frequency;
  /** Every frequency it has had. */
  frequencies: Set<Frequency>;
  /** Its format since each time (ascending). */
  formats: { sinceMs: number; format: ExportFormat }[];
  memberships: Map<EventDataset, Membership[]>;
  enabled: boolean;
  deleted: boolean;
  backfills: ModelBackfill[];
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

  countFault(kind: string): void {
    this.faults.set(kind, (this.faults.get(kind) ?? 0) + 1);
  }
}
