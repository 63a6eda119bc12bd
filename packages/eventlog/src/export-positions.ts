import type { EventDataset } from '@sluice/core';

/**
 * How far the exports of a workspace have gone, per event dataset: the highest recorded time (epoch ms) that
 * any of its destinations has committed (`exportedThroughMs`) or planned (a window stored before it is
 * written). A row recorded at or before that time is behind the export and would never reach it.
 *
 * A port, so ingestion does not depend on the control table: `@sluice/control`'s `ControlExportPositions`
 * implements it with one Query of the workspace's partition. Read once per slice of ingested rows, not per row.
 */
export interface ExportPositions {
  /** Per event dataset, the highest position; a dataset no destination has reached is absent. */
  highestPositions(workspaceId: string): Promise<ReadonlyMap<EventDataset, number>>;
}

/**
 * Where ingestion notes an hour that rows were written into with an explicit recorded time after the hour had
 * ended: the event archive may have archived it already, so its compaction archives it again (merging).
 * `@sluice/control`'s `ArchiveCursorStore` implements it. Marked after the rows are written.
 */
export interface LateHours {
  markLate(workspaceId: string, dataset: EventDataset, hourMs: number): Promise<void>;
}
