import type { ArchiveCoverage, LateHour } from '@sluice/control';
import { EVENT_DATASETS, type EventDataset } from '@sluice/core';
import type { EventSource } from '@sluice/eventlog';
import type { ArchiveBucket } from './bucket.js';
import { ARCHIVE_HOUR_MS, archiveHourKey, hourCeil, hourFloor, positionOfLine } from './keys.js';

/** The archive cursors as the compaction uses them (`@sluice/control` `ArchiveCursorStore`). */
export interface ArchiveCursors {
  get(workspaceId: string, dataset: EventDataset): Promise<ArchiveCoverage | undefined>;
  advance(
    workspaceId: string,
    dataset: EventDataset,
    expected: ArchiveCoverage | undefined,
    next: ArchiveCoverage,
  ): Promise<boolean>;
  listWorkspaceIds(): AsyncIterable<string>;
  /** Hours rows were imported into after they ended (`@sluice/eventlog` `LateHours`). */
  lateHours(workspaceId: string, dataset: EventDataset): Promise<LateHour[]>;
  clearLate(workspaceId: string, dataset: EventDataset, late: LateHour): Promise<boolean>;
}

/** Options of {@link ArchiveCompactor}. */
export interface ArchiveCompactorOptions {
  /** The hot event log (`EventLogReader`: the compaction must read the hot log, never the archive). */
  hot: Pick<EventSource, 'readWindow'>;
  archive: ArchiveBucket;
  cursors: ArchiveCursors;
  /** How long the hot log keeps a row. */
  hotRetentionMs: number;
  /**
   * How long after an hour ends it is archived: late writes (the exports' two-minute lag, ingest slices) have
   * landed by then. @default 10 minutes, at most a quarter of the retention
   */
  settleMs?: number;
  /** @default Date.now */
  now?: () => number;
}

/** What one compaction of one (workspace, dataset) did. */
export interface DatasetCompaction {
  workspaceId: string;
  dataset: EventDataset;
  /** Hours archived (objects written, or found empty). */
  hours: number;
  /** Hours archived again because rows were imported into them after they ended (merged, never shrunk). */
  lateHours: number;
  /** Objects written. */
  objects: number;
  rows: number;
  /** Bytes written (gzip). */
  bytes: number;
  /** The archive cursor afterwards (the end of the last archived hour), if any. */
  throughMs?: number;
  /** Seconds between now and the archive cursor: how far the archive trails the hot log. */
  lagSeconds: number;
  /** Why it stopped before catching up, if it did. */
  stopped?: 'deadline' | 'cursor_moved';
}

/**
 * The scheduled compaction: moves hot event log rows into the archive, one object per (workspace, dataset,
 * UTC hour), before they expire.
 * 1. Read the dataset's archive cursor; without one, start at the oldest hour the hot log may still hold.
 * 2. For each whole hour that ended at least `settleMs` ago: read its rows from the hot log in the reader's
 *    order and stream them into the hour's object (an hour without rows writes no object).
 * 3. Advance the cursor by that hour, conditionally on the value read: a compaction that crashes resumes at
 *    the next hour, and two concurrent compactions never both advance it.
 * Idempotent: writing an hour again writes the same bytes. An hour whose rows may have started to expire is
 * not rewritten over an existing object (it would lose the expired rows).
 */
export class ArchiveCompactor {
  private readonly hot: Pick<EventSource, 'readWindow'>;
  private readonly archive: ArchiveBucket;
  private readonly cursors: ArchiveCursors;
  private readonly hotRetentionMs: number;
  private readonly settleMs: number;
  private readonly now: () => number;

  constructor(options: ArchiveCompactorOptions) {
    if (!(options.hotRetentionMs > 0)) throw new Error('hotRetentionMs must be positive');
    this.hot = options.hot;
    this.archive = options.archive;
    this.cursors = options.cursors;
    this.hotRetentionMs = options.hotRetentionMs;
    this.settleMs = options.settleMs ?? Math.min(10 * 60_000, options.hotRetentionMs / 4);
    this.now = options.now ?? Date.now;
  }

  /** Compacts every dataset of every workspace, until `deadlineMs`; a failing dataset does not stop the rest. */
  async compactAll(
    deadlineMs: number,
  ): Promise<{ results: DatasetCompaction[]; failures: DatasetFailure[] }> {
    const results: DatasetCompaction[] = [];
    const failures: DatasetFailure[] = [];
    for await (const workspaceId of this.cursors.listWorkspaceIds()) {
      for (const dataset of EVENT_DATASETS) {
        if (this.now() >= deadlineMs) return { results, failures };
        try {
          results.push(await this.compactDataset(workspaceId, dataset, deadlineMs));
        } catch (error) {
          failures.push({ workspaceId, dataset, error });
        }
      }
    }
    return { results, failures };
  }

  /** Compacts one (workspace, dataset) up to the last settled hour, or until `deadlineMs`. */
  async compactDataset(
    workspaceId: string,
    dataset: EventDataset,
    deadlineMs = Number.POSITIVE_INFINITY,
  ): Promise<DatasetCompaction> {
    let coverage = await this.cursors.get(workspaceId, dataset);
    const result: DatasetCompaction = {
      workspaceId,
      dataset,
      hours: 0,
      lateHours: 0,
      objects: 0,
      rows: 0,
      bytes: 0,
      lagSeconds: 0,
    };
    // Hours rows were imported into after they ended: archived again (when the cursor has passed them) before
    // the mark is cleared, so every row written before the mark is in the object.
    for (const late of await this.cursors.lateHours(workspaceId, dataset)) {
      if (this.now() >= deadlineMs) break;
      if (coverage !== undefined && late.hourMs < coverage.throughMs && late.hourMs >= coverage.startMs) {
        const written = await this.mergeHour(workspaceId, dataset, late.hourMs);
        result.rows += written.lines;
        result.bytes += written.bytes;
        result.lateHours += 1;
      }
      await this.cursors.clearLate(workspaceId, dataset, late);
    }
    const endMs = hourFloor(this.now() - this.settleMs);
    let hourMs = coverage?.throughMs ?? hourFloor(this.now() - this.hotRetentionMs);
    while (hourMs + ARCHIVE_HOUR_MS <= endMs) {
      if (this.now() >= deadlineMs) {
        result.stopped = 'deadline';
        break;
      }
      const written = await this.archiveHour(workspaceId, dataset, hourMs);
      if (written !== undefined) {
        result.objects += written.lines > 0 ? 1 : 0;
        result.rows += written.lines;
        result.bytes += written.bytes;
      }
      const next = { startMs: coverage?.startMs ?? hourMs, throughMs: hourMs + ARCHIVE_HOUR_MS };
      if (!(await this.cursors.advance(workspaceId, dataset, coverage, next))) {
        result.stopped = 'cursor_moved';
        break;
      }
      coverage = next;
      result.hours += 1;
      hourMs += ARCHIVE_HOUR_MS;
    }
    if (coverage !== undefined) result.throughMs = coverage.throughMs;
    result.lagSeconds = Math.max(0, Math.round((this.now() - (coverage?.throughMs ?? hourMs)) / 1000));
    return result;
  }

  /**
   * Archives an hour again: its object's lines and the hot log's, merged in position order (a row in both
   * once), so the object never loses a row whose hot copy has expired.
   */
  private mergeHour(workspaceId: string, dataset: EventDataset, hourMs: number) {
    return this.archive.writeHour(
      workspaceId,
      dataset,
      hourMs,
      mergedLines(
        this.archive.readHour(workspaceId, dataset, hourMs),
        linesOf(this.hot, workspaceId, dataset, hourMs),
      ),
    );
  }

  /** Writes one hour's object from the hot log; undefined when an existing object was kept. */
  private async archiveHour(workspaceId: string, dataset: EventDataset, hourMs: number) {
    const hotWhole = hourMs >= hourCeil(this.now() - this.hotRetentionMs + this.settleMs);
    if (!hotWhole && (await this.archive.exists(archiveHourKey(workspaceId, dataset, hourMs))))
      return undefined;
    return this.archive.writeHour(
      workspaceId,
      dataset,
      hourMs,
      linesOf(this.hot, workspaceId, dataset, hourMs),
    );
  }
}

/** The lines of one hour in position order, the hot log's line where both hold a position. */
async function* mergedLines(
  archived: AsyncIterable<string>,
  hot: AsyncIterable<string>,
): AsyncGenerator<string> {
  const a = archived[Symbol.asyncIterator]();
  const h = hot[Symbol.asyncIterator]();
  let x = await a.next();
  let y = await h.next();
  while (!x.done || !y.done) {
    if (y.done || (!x.done && positionOfLine(x.value).key < positionOfLine(y.value).key)) {
      yield x.value as string;
      x = await a.next();
    } else {
      if (!x.done && positionOfLine(x.value).key === positionOfLine(y.value).key) x = await a.next();
      yield y.value;
      y = await h.next();
    }
  }
}

/** A dataset whose compaction failed (reported, alarmed; the next schedule tries again). */
export interface DatasetFailure {
  workspaceId: string;
  dataset: EventDataset;
  error: unknown;
}

/** The lines of one hour of the hot log, in order. */
async function* linesOf(
  hot: Pick<EventSource, 'readWindow'>,
  workspaceId: string,
  dataset: EventDataset,
  hourMs: number,
): AsyncGenerator<string> {
  for await (const page of hot.readWindow(workspaceId, dataset, hourMs - 1, hourMs + ARCHIVE_HOUR_MS - 1)) {
    yield* page.lines;
  }
}
