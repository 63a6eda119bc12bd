import { type Destination, includedOrganizations } from '@sluice/core';
import { type EngineDeps, linksOf } from './deps.js';
import type { RunRef, WorkItem } from './payloads.js';

/**
 * The work item a writer writes: a span partitioned by organisation (`partitioned`) gets the organisations its
 * windows read, from where its plan keeps them, so the state machine's payloads stay small however many
 * children an export includes (docs/internals.md, "Parent organisations"):
 * - a regular run's span: its planned span in the dataset's cursor (`PlannedSpan.organizations`, fixed when
 *   first planned), read consistently; `undefined` when the cursor no longer holds the span (another run
 *   committed or replanned it, so this run lost its lease);
 * - a backfill's span: resolved as its plan resolves it (`includedOrganizations` over the destination's choice
 *   and the parent's link history), which only changes after the change's time, so never for a span it plans
 *   (they end at or before the time it is planned).
 * Any other item is returned as it is.
 */
export async function withPlannedOrganizations(
  run: RunRef,
  item: WorkItem,
  destination: Destination,
  deps: Pick<EngineDeps, 'cursors' | 'organizations'>,
): Promise<WorkItem | undefined> {
  if (item.kind !== 'events' || item.partitioned !== true) return item;
  const { partitioned: _resolved, ...span } = item;
  if (run.backfillId !== undefined) {
    const links = await linksOf(destination, deps);
    return { ...span, organizations: includedOrganizations(destination, links, span) };
  }
  const cursor = (await deps.cursors.get(run.workspaceId, run.destinationId)).get(item.dataset);
  const planned = cursor?.plannedSpans.find(
    (entry) => entry.fromMs === span.fromMs && entry.toMs === span.toMs,
  );
  if (planned?.organizations === undefined) return undefined;
  return { ...span, organizations: planned.organizations };
}
