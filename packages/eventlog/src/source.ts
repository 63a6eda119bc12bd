import type { EventDataset } from '@sluice/core';

/**
 * The port the export engine reads through. `EventLogReader` implements it over the DynamoDB tables; a
 * platform team with another store (Kafka, a warehouse, their own database) implements the same three calls.
 *
 * Lines are serialized rows exactly as files hold them (`@sluice/core` `serializeRow`): JSON, no newline,
 * `schema_version` included. The engine writes them byte for byte, so the same window read twice must yield
 * the same lines in the same order.
 */
export interface EventSource {
  /**
   * The rows of one dataset recorded in `(fromMs, toMs]` (epoch ms; `fromMs` exclusive, `toMs` inclusive), as
   * pages of lines in recorded-time order, ties broken by id, each line with its position and its recorded
   * time. Streams: memory is bounded by a few pages, not by the window. An empty window yields nothing. With
   * `afterKey` (a position from an earlier page), reading continues right after that line: a writer out of
   * time resumes there (a line recorded at or before `fromMs` skips nothing: `resumeFrom` in keys.ts). The writer reads a span of consecutive windows in one pass and cuts it into windows
   * by the recorded times.
   */
  readWindow(
    workspaceId: string,
    dataset: EventDataset,
    fromMs: number,
    toMs: number,
    afterKey?: string,
  ): AsyncIterable<EventPage>;

  /** True when at least one row of the dataset was recorded in `(afterMs, untilMs]`. Cheap: no rows are read. */
  hasRowsAfter(
    workspaceId: string,
    dataset: EventDataset,
    afterMs: number,
    untilMs: number,
  ): Promise<boolean>;

  /**
   * The current subscribers of a workspace, as pages of stored lines (the snapshot row without
   * `snapshot_date`: add it with `@sluice/core` `withSnapshotDate`). Every subscriber exactly once; order is
   * stable for an unchanged table. With `afterKey`, continues right after that subscriber.
   */
  readSubscribers(workspaceId: string, afterKey?: string): AsyncIterable<SourcePage>;
}

/**
 * A page of lines and, for each line, its position in the source: an opaque string that
 * {@link EventSource.readWindow} and {@link EventSource.readSubscribers} take back as `afterKey`.
 */
export interface SourcePage {
  lines: string[];
  keys: string[];
}

/** A page of {@link EventSource.readWindow}: also each line's recorded time (epoch ms), in the same order. */
export interface EventPage extends SourcePage {
  recordedMs: number[];
}
