import { paginateQuery } from '@aws-sdk/lib-dynamodb';
import { ALL_CHILDREN, EVENT_DATASETS, type EventDataset } from '@sluice/core';
import {
  type ControlTable,
  type ControlTableOptions,
  resolveControlTable,
  withDynamoErrors,
} from './client.js';
import { workspacePk } from './items.js';
import { OrganizationStore } from './organizations.js';

/** `DEST#<destinationId>#CURSOR#<dataset>`: the part of a cursor's sort key that names its dataset. */
const CURSOR_MARKER = '#CURSOR#';

/**
 * How far the exports of a workspace have gone, read from the cursor items (docs/internals.md): per event
 * dataset, the highest `exportedThroughMs` or planned window end (`planned[].toMs`) over every destination of the
 * workspace, paused ones included, and, for a child workspace, over its parent's destinations that include it
 * (its id or `'*'` in their `childOrganizations`): their windows read the child's rows too. Ingestion refuses an
 * explicit `recorded_at` at or behind it (the `ExportPositions` port of `@sluice/eventlog`, which this implements
 * without either package importing the other).
 */
export class ControlExportPositions {
  private readonly table: ControlTable;
  private readonly organizations: OrganizationStore;

  constructor(options: ControlTableOptions) {
    this.table = resolveControlTable(options);
    this.organizations = new OrganizationStore(options);
  }

  /** {@link ControlExportPositions}: the workspace's own exports' positions and, for a child, its parent's. */
  async highestPositions(workspaceId: string): Promise<Map<EventDataset, number>> {
    const positions = await this.positionsOf(workspaceId);
    const parentId = await this.organizations.parentOf(workspaceId);
    if (parentId === null) return positions;
    for (const [dataset, position] of await this.positionsOf(parentId, workspaceId)) {
      if (position > (positions.get(dataset) ?? Number.NEGATIVE_INFINITY)) positions.set(dataset, position);
    }
    return positions;
  }

  /**
   * One consistent Query of the workspace's `DEST#` items (cursor items kept, their position attributes
   * projected; with `childId`, the destination items' `childOrganizations` too, and only the cursors of the
   * destinations that include that child), all pages. A destination item sorts before its cursors.
   * A dataset no destination has reached is absent.
   */
  private async positionsOf(workspaceId: string, childId?: string): Promise<Map<EventDataset, number>> {
    const positions = new Map<EventDataset, number>();
    const including = new Set<string>();
    const pages = paginateQuery(
      { client: this.table.client },
      {
        TableName: this.table.tableName,
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :dest)',
        // Only cursor items carry these (a filter may not name the key, so the sort key is checked below).
        FilterExpression:
          childId === undefined
            ? 'attribute_exists(exportedThroughMs) OR attribute_exists(planned)'
            : 'attribute_exists(exportedThroughMs) OR attribute_exists(planned) OR attribute_exists(childOrganizations)',
        ProjectionExpression:
          childId === undefined
            ? 'SK, exportedThroughMs, planned'
            : 'SK, exportedThroughMs, planned, childOrganizations',
        ExpressionAttributeValues: { ':pk': workspacePk(workspaceId), ':dest': 'DEST#' },
        ConsistentRead: true,
      },
    );
    await withDynamoErrors(async () => {
      for await (const page of pages) {
        for (const item of page.Items ?? []) {
          const sk = String(item.SK);
          const marker = sk.indexOf(CURSOR_MARKER);
          if (marker === -1) {
            const list = Array.isArray(item.childOrganizations) ? (item.childOrganizations as unknown[]) : [];
            if (childId !== undefined && (list.includes(childId) || list.includes(ALL_CHILDREN)))
              including.add(sk);
            continue;
          }
          if (childId !== undefined && !including.has(sk.slice(0, marker))) continue;
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
