import { paginateQuery } from '@aws-sdk/lib-dynamodb';
import { EVENT_DATASETS, type EventDataset } from '@sluice/core';
import {
  type ControlTable,
  type ControlTableOptions,
  resolveControlTable,
  withDynamoErrors,
} from './client.js';
import { workspacePk } from './items.js';

/** `DEST#<destinationId>#CURSOR#<dataset>`: the part of a cursor's sort key that names its dataset. */
const CURSOR_MARKER = '#CURSOR#';

/**
 * How far the exports of a workspace have gone, read from the cursor items (docs/internals.md): per event
 * dataset, the highest `exportedThroughMs` or planned window end (`planned[].toMs`) over every destination of the
 * workspace, paused ones included. Ingestion refuses an explicit `recorded_at` at or behind it (the
 * `ExportPositions` port of `@sluice/eventlog`, which this implements without either package importing the other).
 */
export class ControlExportPositions {
  private readonly table: ControlTable;

  constructor(options: ControlTableOptions) {
    this.table = resolveControlTable(options);
  }

  /**
   * One consistent Query of the workspace's `DEST#` items (cursor items kept, their position attributes
   * projected), all pages.
   * A dataset no destination has reached is absent.
   */
  async highestPositions(workspaceId: string): Promise<Map<EventDataset, number>> {
    const positions = new Map<EventDataset, number>();
    const pages = paginateQuery(
      { client: this.table.client },
      {
        TableName: this.table.tableName,
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :dest)',
        // Only cursor items carry these (a filter may not name the key, so the sort key is checked below).
        FilterExpression: 'attribute_exists(exportedThroughMs) OR attribute_exists(planned)',
        ProjectionExpression: 'SK, exportedThroughMs, planned',
        ExpressionAttributeValues: { ':pk': workspacePk(workspaceId), ':dest': 'DEST#' },
        ConsistentRead: true,
      },
    );
    await withDynamoErrors(async () => {
      for await (const page of pages) {
        for (const item of page.Items ?? []) {
          const sk = String(item.SK);
          const marker = sk.indexOf(CURSOR_MARKER);
          if (marker === -1) continue;
          const dataset = EVENT_DATASETS.find((name) => name === sk.slice(marker + CURSOR_MARKER.length));
          if (dataset === undefined) continue;
          const position = cursorPosition(item);
          if (position !== undefined && position > (positions.get(dataset) ?? -Infinity)) {
            positions.set(dataset, position);
          }
        }
      }
    });
    return positions;
  }
}

/** The furthest recorded time a cursor item has committed or planned, or `undefined` for neither. */
function cursorPosition(item: Record<string, unknown>): number | undefined {
  let position = typeof item.exportedThroughMs === 'number' ? item.exportedThroughMs : undefined;
  const planned = Array.isArray(item.planned) ? item.planned : [];
  for (const window of planned as { toMs?: unknown }[]) {
    if (typeof window?.toMs === 'number' && (position === undefined || window.toMs > position)) {
      position = window.toMs;
    }
  }
  return position;
}
