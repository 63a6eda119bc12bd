import { ALL_CHILDREN, type ChildLink, type RemovedChildEntry } from './organizations.js';
import type { Window } from './windows.js';

/**
 * Which organisations' rows an export reads for a span of recorded time (issue 27). Pure.
 *
 * A parent workspace's export may include child workspaces (`Destination.childOrganizations`: ids, or `['*']`
 * for every current and future child). A child's rows are read from its own event log, exactly over the time
 * it was included: from `max(link time, the time its entry (or the '*' entry) was added to the list)`,
 * exclusive (like a dataset added later: no row recorded at or before it, even inside the first window), to its
 * unlink time, inclusive. An entry removed from the list is recorded with its times
 * (`childOrganizationsRemoved`): it still includes the child over `(added, removed]`, so windows planned after
 * the removal (a catching-up run, a retry, a backfill) include it exactly for the time before the removal.
 */

/** One organisation an export reads for a span: its workspace id and, when inside the span, its start and stop. */
export interface IncludedOrganization {
  id: string;
  /** Rows recorded at or before this are not read (absent: from the span's start). */
  startMs?: number;
  /** Rows recorded after this are not read (absent: to the span's end). */
  stopMs?: number;
}

/** The parts of a destination the choice of organisations depends on. */
export interface OrganizationChoice {
  workspaceId: string;
  childOrganizations?: readonly string[];
  /** When each entry of `childOrganizations` (`'*'` included) was added (ISO). */
  childOrganizationsAddedAt?: Readonly<Record<string, string>>;
  /** Entries removed from `childOrganizations`, each with the time it was added and removed. */
  childOrganizationsRemoved?: readonly RemovedChildEntry[];
}

/** True when the destination's files are partitioned by organisation (its list of children is not empty). */
export function includesChildren(destination: Pick<OrganizationChoice, 'childOrganizations'>): boolean {
  return (destination.childOrganizations?.length ?? 0) > 0;
}

/**
 * True when the export includes, or once included, children: its list is not empty or an entry was removed
 * from it. Only then does the link history matter (windows before a removal still read the removed child).
 */
export function hasIncludedChildren(
  destination: Pick<OrganizationChoice, 'childOrganizations' | 'childOrganizationsRemoved'>,
): boolean {
  return includesChildren(destination) || (destination.childOrganizationsRemoved?.length ?? 0) > 0;
}

/** Epoch ms of an ISO time; an absent or unreadable one is `fallback`. */
function msOf(iso: string | null | undefined, fallback: number): number {
  const parsed = iso === null || iso === undefined ? Number.NaN : Date.parse(iso);
  return Number.isFinite(parsed) ? parsed : fallback;
}

/**
 * The organisations whose rows an export reads in `range` (`fromMs` exclusive, `toMs` inclusive): the parent
 * first (always, whole), then each child included during some part of the range, ordered by id then start,
 * with `startMs`/`stopMs` only where they lie inside the range. A child linked twice (unlinked, linked
 * again), or listed twice (removed, added again), appears once per part of a link it was listed in that
 * overlaps the range. Links of other parents are ignored.
 */
export function includedOrganizations(
  destination: OrganizationChoice,
  links: readonly ChildLink[],
  range: Window,
): IncludedOrganization[] {
  const parent: IncludedOrganization = { id: destination.workspaceId };
  const listed = listedPeriods(destination);
  if (listed.length === 0) return [parent];
  const children: IncludedOrganization[] = [];
  for (const link of links) {
    if (link.parentId !== destination.workspaceId || link.childId === destination.workspaceId) continue;
    const linkedMs = msOf(link.linkedAt, Number.NEGATIVE_INFINITY);
    const unlinkedMs = msOf(link.unlinkedAt, Number.POSITIVE_INFINITY);
    // Included while linked and listed (its own entry, or '*'): each listed period that overlaps the link.
    const periods = listed.filter((period) => period.entry === ALL_CHILDREN || period.entry === link.childId);
    for (const period of mergedPeriods(periods)) {
      const startMs = Math.max(linkedMs, period.fromMs);
      const stopMs = Math.min(unlinkedMs, period.toMs);
      if (!(startMs < stopMs) || !(startMs < range.toMs) || !(stopMs > range.fromMs)) continue;
      children.push({
        id: link.childId,
        ...(startMs > range.fromMs ? { startMs } : {}),
        ...(stopMs < range.toMs ? { stopMs } : {}),
      });
    }
  }
  children.sort(
    (a, b) =>
      (a.id < b.id ? -1 : a.id > b.id ? 1 : 0) ||
      (a.startMs ?? Number.NEGATIVE_INFINITY) - (b.startMs ?? Number.NEGATIVE_INFINITY),
  );
  return [parent, ...children];
}

/**
 * The organisations a window planned now reads (`PlannedSpan.organizations`): every included one while the
 * list is not empty (the files partitioned by organisation); once it is emptied, those of the time before
 * the removals, when a child was still included in `range` (partitioned, so its rows still reach the export);
 * otherwise `undefined`: the workspace's own rows, unpartitioned.
 */
export function plannedOrganizations(
  destination: OrganizationChoice,
  links: readonly ChildLink[],
  range: Window,
): IncludedOrganization[] | undefined {
  if (!hasIncludedChildren(destination)) return undefined;
  const entries = includedOrganizations(destination, links, range);
  return includesChildren(destination) || entries.length > 1 ? entries : undefined;
}

/** A period an entry of the list was on it: `(fromMs, toMs]` (to `+Infinity` while it still is). */
interface ListedPeriod {
  entry: string;
  fromMs: number;
  toMs: number;
}

/** Every period an entry was on the export's list: the current entries, then the removed ones. */
function listedPeriods(destination: OrganizationChoice): ListedPeriod[] {
  const addedAt = destination.childOrganizationsAddedAt ?? {};
  return [
    ...(destination.childOrganizations ?? []).map((entry) => ({
      entry,
      fromMs: msOf(addedAt[entry], Number.NEGATIVE_INFINITY),
      toMs: Number.POSITIVE_INFINITY,
    })),
    ...(destination.childOrganizationsRemoved ?? []).map((removed) => ({
      entry: removed.entry,
      fromMs: msOf(removed.addedAt, Number.NEGATIVE_INFINITY),
      toMs: msOf(removed.removedAt, Number.NEGATIVE_INFINITY),
    })),
  ];
}

/** Periods merged where they overlap or touch (a child's own entry and '*' at once count once), in order. */
function mergedPeriods(periods: readonly ListedPeriod[]): { fromMs: number; toMs: number }[] {
  const sorted = periods.filter((period) => period.fromMs < period.toMs).sort((a, b) => a.fromMs - b.fromMs);
  const merged: { fromMs: number; toMs: number }[] = [];
  for (const { fromMs, toMs } of sorted) {
    const last = merged.at(-1);
    if (last !== undefined && fromMs <= last.toMs) last.toMs = Math.max(last.toMs, toMs);
    else merged.push({ fromMs, toMs });
  }
  return merged;
}

/**
 * The parts of `range` an organisation's entries cover, merged per organisation: `(fromMs, toMs]` intervals in
 * order, clipped to the range and to `startMs` (an export's exact start, which applies to every organisation).
 * The writer reads an organisation's rows over these only.
 */
export function organizationIntervals(
  entries: readonly IncludedOrganization[],
  id: string,
  range: Window,
  startMs = Number.NEGATIVE_INFINITY,
): Window[] {
  const intervals: Window[] = [];
  for (const entry of entries) {
    if (entry.id !== id) continue;
    const fromMs = Math.max(range.fromMs, entry.startMs ?? range.fromMs, startMs);
    const toMs = Math.min(range.toMs, entry.stopMs ?? range.toMs);
    if (fromMs < toMs) intervals.push({ fromMs, toMs });
  }
  intervals.sort((a, b) => a.fromMs - b.fromMs);
  const merged: Window[] = [];
  for (const interval of intervals) {
    const last = merged.at(-1);
    if (last !== undefined && interval.fromMs <= last.toMs) last.toMs = Math.max(last.toMs, interval.toMs);
    else merged.push({ ...interval });
  }
  return merged;
}

/** The distinct organisation ids of `entries`, in order of first appearance. */
export function organizationIds(entries: readonly IncludedOrganization[]): string[] {
  return [...new Set(entries.map((entry) => entry.id))];
}
