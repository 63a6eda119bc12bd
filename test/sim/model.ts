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
  /** Faults injected so far, by kind. */
  readonly faults = new Map<string, number>();

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

  countFault(kind: string): void {
    this.faults.set(kind, (this.faults.get(kind) ?? 0) + 1);
  }
}
