/**
 * Parent organisations: a workspace may have child workspaces (one level: a child has at most one parent and
 * is never a parent itself). A parent's data export may include some of its children's data
 * (`Destination.childOrganizations`), or every current and future child ({@link ALL_CHILDREN}).
 */

/** `childOrganizations: ['*']`: every current and future child of the export's workspace. */
export const ALL_CHILDREN = '*';

/**
 * The most children a workspace may have at once (`orgs link` refuses one more). An export plans the
 * organisations of each span into its cursor, one DynamoDB item of at most 400 KB per dataset: each distinct
 * organisation once (~190 bytes with a 128-character id, its start and stop), so 1,000 children with churn
 * stay well inside it. The ExportRun payloads do not grow with the number of children.
 */
export const MAX_CHILD_ORGANIZATIONS = 1000;

/**
 * One link of a child workspace to its parent. Links are kept after an unlink (`unlinkedAt` set): linking
 * the same child again makes a new link, so which children a parent had at any time can be computed.
 */
export interface ChildLink {
  parentId: string;
  childId: string;
  /** When the link was made (ISO). */
  linkedAt: string;
  /** When it was ended (ISO); null while the child is linked. */
  unlinkedAt: string | null;
}

/**
 * When each entry of an export's new `childOrganizations` was added (like `datasetStartedAt`): an entry
 * already in the list keeps its time, a new one gets `nowIso`, a removed one is dropped.
 */
export function childOrganizationsAddedAt(
  previous: Readonly<Record<string, string>> | undefined,
  next: readonly string[],
  nowIso: string,
): Record<string, string> {
  return Object.fromEntries(next.map((entry) => [entry, previous?.[entry] ?? nowIso]));
}

/**
 * One past period of an entry of an export's `childOrganizations` (a child id or `'*'`): added at `addedAt`,
 * removed at `removedAt` (ISO). Rows the entry covered are included over `(addedAt, removedAt]`, like a
 * link's `(linkedAt, unlinkedAt]`, so windows planned after the removal (a catching-up run, a backfill) still
 * include the child for the time before it.
 */
export interface RemovedChildEntry {
  entry: string;
  addedAt: string;
  removedAt: string;
}

/**
 * The removal history after the list changes from the entries of `previousAddedAt` to `next`: every entry
 * removed now is recorded with its addition time and `nowIso`, after the `previous` history (kept whole).
 */
export function childOrganizationsRemoved(
  previous: readonly RemovedChildEntry[] | undefined,
  previousAddedAt: Readonly<Record<string, string>> | undefined,
  next: readonly string[],
  nowIso: string,
): RemovedChildEntry[] {
  // In the order they were added (a stored map keeps no order), so the same removal stores the same list.
  const removed = Object.entries(previousAddedAt ?? {})
    .filter(([entry]) => !next.includes(entry))
    .sort(([a, aAt], [b, bAt]) => aAt.localeCompare(bAt) || a.localeCompare(b))
    .map(([entry, addedAt]) => ({ entry, addedAt, removedAt: nowIso }));
  return [...(previous ?? []), ...removed];
}
