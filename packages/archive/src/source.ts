import type { ArchiveCoverage } from '@sluice/control';
import type { EventDataset } from '@sluice/core';
import { type EventPage, type EventSource, resumeFrom, type SourcePage } from '@sluice/eventlog';
import type { ArchiveBucket } from './bucket.js';
import {
  ARCHIVE_HOUR_MS,
  archiveDatasetPrefix,
  archiveHourKey,
  hourCeil,
  hourFloor,
  positionOfLine,
} from './keys.js';

/** Reads an archive cursor (`@sluice/control` `ArchiveCursorStore`). */
export interface ArchiveCoverageReader {
  get(workspaceId: string, dataset: EventDataset): Promise<ArchiveCoverage | undefined>;
}

/** Options of {@link ArchivedEventSource}. */
export interface ArchivedEventSourceOptions {
  /** The hot event log (`EventLogReader`). */
  hot: EventSource;
  archive: ArchiveBucket;
  coverage: ArchiveCoverageReader;
  /** How long the hot log keeps a row (its TTL): older hours may have lost rows there. */
  hotRetentionMs: number;
  /**
   * How long before its expiry an hour is already read from the archive, so a row expiring during a read is
   * never missed. @default a quarter of the retention, at most 10 minutes
   */
  expiryMarginMs?: number;
  /** Lines per page read from the archive. @default 1000 */
  batchSize?: number;
  /** @default Date.now */
  now?: () => number;
}

/**
 * The export engine's {@link EventSource} over the hot event log and the event archive: the same rows, in the
 * same order (recorded time, then id), with the same positions, whichever holds them, so a file written from
 * the archive is byte-identical to one written from the hot log.
 *
 * An hour is read from the hot log while all of it is still there (its start is within the hot retention,
 * less a margin): a current export costs no archive read and no cursor read. An older hour is read from the
 * archive when the archive's cursor covers it, else from the hot log (whatever has not expired). Rows the
 * hot log and the archive both lack are absent: `@sluice/engine` plan.ts reports them as expired.
 */
export class ArchivedEventSource implements EventSource {
  private readonly hot: EventSource;
  private readonly archive: ArchiveBucket;
  private readonly coverage: ArchiveCoverageReader;
  private readonly hotRetentionMs: number;
  private readonly expiryMarginMs: number;
  private readonly batchSize: number;
  private readonly now: () => number;

  constructor(options: ArchivedEventSourceOptions) {
    if (!(options.hotRetentionMs > 0)) throw new Error('hotRetentionMs must be positive');
    this.hot = options.hot;
    this.archive = options.archive;
    this.coverage = options.coverage;
    this.hotRetentionMs = options.hotRetentionMs;
    this.expiryMarginMs = options.expiryMarginMs ?? Math.min(10 * 60_000, options.hotRetentionMs / 4);
    this.batchSize = options.batchSize ?? 1_000;
    this.now = options.now ?? Date.now;
  }

  /** The first hour start from which the hot log still holds every row. */
  private hotWholeFromMs(): number {
    return hourCeil(this.now() - this.hotRetentionMs + this.expiryMarginMs);
  }

  /**
   * The part of `(fromMs, toMs]` to read from the archive, as `(loMs, hiMs]`, or undefined when none: the
   * archived hours that the hot log may no longer hold whole.
   */
  private async archiveSpan(
    workspaceId: string,
    dataset: EventDataset,
    fromMs: number,
    toMs: number,
  ): Promise<{ loMs: number; hiMs: number } | undefined> {
    const hotFromMs = this.hotWholeFromMs();
    if (hourFloor(fromMs + 1) >= hotFromMs) return undefined;
    const coverage = await this.coverage.get(workspaceId, dataset);
    if (coverage === undefined) return undefined;
    const loMs = Math.max(fromMs, coverage.startMs - 1);
    const hiMs = Math.min(toMs, coverage.throughMs - 1, hotFromMs - 1);
    return hiMs > loMs ? { loMs, hiMs } : undefined;
  }

  /** {@inheritDoc EventSource.readWindow} */
  async *readWindow(
    workspaceId: string,
    dataset: EventDataset,
    fromMs: number,
    toMs: number,
    afterKey?: string,
  ): AsyncGenerator<EventPage, void, undefined> {
    const { startMs, afterKey: resumeAfter } = resumeFrom(fromMs, toMs, afterKey);
    if (!(toMs > startMs)) return;
    const span = await this.archiveSpan(workspaceId, dataset, startMs, toMs);
    if (span === undefined) {
      yield* this.hot.readWindow(workspaceId, dataset, fromMs, toMs, resumeAfter);
      return;
    }
    // Hot before the archived hours (older than the archive's start), the archive, hot after them.
    let resumeKey = resumeAfter;
    if (span.loMs > startMs) {
      yield* this.hot.readWindow(workspaceId, dataset, startMs, span.loMs, resumeKey);
      resumeKey = undefined;
    }
    yield* this.readArchive(workspaceId, dataset, span.loMs, span.hiMs, resumeKey);
    if (toMs > span.hiMs) yield* this.hot.readWindow(workspaceId, dataset, span.hiMs, toMs);
  }

  /** The archived rows recorded in `(loMs, hiMs]`, after `afterKey` when given, in pages. */
  private async *readArchive(
    workspaceId: string,
    dataset: EventDataset,
    loMs: number,
    hiMs: number,
    afterKey: string | undefined,
  ): AsyncGenerator<EventPage, void, undefined> {
    let page: EventPage = { lines: [], keys: [], recordedMs: [] };
    for (let hourMs = hourFloor(loMs + 1); hourMs <= hiMs; hourMs += ARCHIVE_HOUR_MS) {
      for await (const line of this.archive.readHour(workspaceId, dataset, hourMs)) {
        const position = positionOfLine(line);
        if (position.recordedMs <= loMs) continue;
        if (position.recordedMs > hiMs) break;
        if (afterKey !== undefined && position.key <= afterKey) continue;
        page.lines.push(line);
        page.keys.push(position.key);
        page.recordedMs.push(position.recordedMs);
        if (page.lines.length >= this.batchSize) {
          yield page;
          page = { lines: [], keys: [], recordedMs: [] };
        }
      }
    }
    if (page.lines.length > 0) yield page;
  }

  /** {@inheritDoc EventSource.hasRowsAfter} An archived hour with an object counts as having rows. */
  async hasRowsAfter(
    workspaceId: string,
    dataset: EventDataset,
    afterMs: number,
    untilMs: number,
  ): Promise<boolean> {
    if (await this.hot.hasRowsAfter(workspaceId, dataset, afterMs, untilMs)) return true;
    const span = await this.archiveSpan(workspaceId, dataset, afterMs, untilMs);
    if (span === undefined) return false;
    const first = archiveHourKey(workspaceId, dataset, hourFloor(span.loMs + 1));
    const last = archiveHourKey(workspaceId, dataset, hourFloor(span.hiMs));
    for await (const key of this.archive.listKeys(
      archiveDatasetPrefix(workspaceId, dataset),
      beforeKey(first),
      1,
    )) {
      return key <= last;
    }
    return false;
  }

  /** {@inheritDoc EventSource.readSubscribers} The subscribers are not archived: the hot table's. */
  readSubscribers(workspaceId: string, afterKey?: string): AsyncIterable<SourcePage> {
    return this.hot.readSubscribers(workspaceId, afterKey);
  }
}

/** A key that sorts right before `key` (ListObjectsV2 `StartAfter` is exclusive). */
function beforeKey(key: string): string {
  return key.slice(0, -1);
}
