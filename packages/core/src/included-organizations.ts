import { ALL_CHILDREN, type ChildLink } from './organizations.js';
import type { Window } from './windows.js';

/**
 * Which organisations' rows an export reads for a span of recorded time (issue 27). Pure.
 *
 * A parent workspace's export may include child workspaces (`Destination.childOrganizations`: ids, or `['*']`
 * for every current and future child). A child's rows are read from its own event log, exactly over the time
 * it was included: from `max(link time, the time its entry (or the '*' entry) was added to the list)`,
 * exclusive (like a dataset added later: no row recorded at or before it, even inside the first window), to its
 * unlink time, inclusive. A removal from the list leaves no trace to compute it from: a removed child is simply
 * not included in windows planned after the removal (windows planned before keep it, since the engine fixes the
 * result in each planned span).
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
}

/** True when the destination's files are partitioned by organisation (its list of children is not empty). */
export function includesChildren(destination: Pick<OrganizationChoice, 'childOrganizations'>): boolean {
  return (destination.childOrganizations?.length ?? 0) > 0;
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
 * again) appears once per link that overlaps the range. Links of other parents are ignored.
 */
export function includedOrganizations(
  destination: OrganizationChoice,
  links: readonly ChildLink[],
  range: Window,
): IncludedOrganization[] {
  const parent: IncludedOrganization = { id: destination.workspaceId };
  const list = destination.childOrganizations ?? [];
  if (list.length === 0) return [parent];
  const addedAt = destination.childOrganizationsAddedAt ?? {};
  const addedMs = (entry: string) => msOf(addedAt[entry], Number.NEGATIVE_INFINITY);
  const children: IncludedOrganization[] = [];
  for (const link of links) {
    if (link.parentId !== destination.workspaceId || link.childId === destination.workspaceId) continue;
    const entries = list.filter((entry) => entry === ALL_CHILDREN || entry === link.childId);
    if (entries.length === 0) continue;
    // Included from the earliest entry that names it (its own, or '*'), once it is linked.
    const listedMs = Math.min(...entries.map(addedMs));
    const startMs = Math.max(msOf(link.linkedAt, Number.NEGATIVE_INFINITY), listedMs);
    const stopMs = msOf(link.unlinkedAt, Number.POSITIVE_INFINITY);
    if (!(startMs < stopMs) || !(startMs < range.toMs) || !(stopMs > range.fromMs)) continue;
    children.push({
      id: link.childId,
      ...(startMs > range.fromMs ? { startMs } : {}),
      ...(stopMs < range.toMs ? { stopMs } : {}),
    });
  }
  children.sort(
    (a, b) =>
      (a.id < b.id ? -1 : a.id > b.id ? 1 : 0) ||
      (a.startMs ?? Number.NEGATIVE_INFINITY) - (b.startMs ?? Number.NEGATIVE_INFINITY),
  );
  return [parent, ...children];
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
