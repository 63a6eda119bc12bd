/**
 * The export semantics of the two stateful datasets of the second product (docs/internals.md, "Current-row
 * datasets"): the pure decisions, with no storage. The event log writer reads the current state, asks these
 * functions what an input does to it, and writes the new state and the emitted row together.
 *
 * - `message_events`: Sluice keeps each message's current row. A producer sends a whole row (a new message),
 *   or a change: an existing `message_id`, the changed fields and `updated_at` (required). A change whose
 *   `updated_at` is not after the current row's is ignored (receipts arrive out of order); a change for an
 *   unknown `message_id` is refused with its reason. The whole current row is emitted (recorded, so
 *   exported in the window holding that time) when the message is created and whenever its `status`
 *   changes; a change of other fields only is kept and goes out with the next status change.
 * - `project_summary`: one row per project, emitted once, when it is first received complete
 *   (`completed_at` not null); incomplete projects are not emitted, a project received again after its
 *   completion is counted and not emitted.
 *
 * Pure: no AWS SDK.
 */
import { CATALOG, type DatasetDefinition } from './catalog/index.js';
import { timestamp } from './rows.js';

/** A row as the dataset's schema gives it: field names to normalized values. */
export type CurrentRow = Readonly<Record<string, unknown>>;

/** Validates and normalizes a whole row (the dataset's schema); the reason names fields, never values. */
export type ParseCurrentRow = (
  input: unknown,
) => { ok: true; row: CurrentRow } | { ok: false; reason: string };

/** What one `message_events` input does to the message's current row. */
export type MessageDecision =
  /** A new message: its row becomes the current row and is emitted. */
  | { kind: 'created'; row: CurrentRow; emit: true }
  /** A newer change: the merged row becomes the current row; emitted when `status` changed. */
  | { kind: 'changed'; row: CurrentRow; emit: boolean }
  /** A change whose `updated_at` is at or before the current row's: nothing changes (counted). */
  | { kind: 'out_of_order' }
  /** Refused with its reason (an unknown `message_id`, a change without `updated_at`, an invalid field). */
  | { kind: 'refused'; reason: string };

/** Fields of an input that are not row fields (the envelope). */
const ENVELOPE_FIELDS = new Set(['dataset', 'recorded_at', 'test', 'import', 'source']);

/** Epoch ms of a row's `updated_at`, or undefined when it has none. */
export function updatedAtMsOf(row: CurrentRow): number | undefined {
  const value = row.updated_at;
  if (value === null || value === undefined) return undefined;
  const parsed = timestamp.safeParse(value);
  return parsed.success ? Date.parse(parsed.data) : undefined;
}

/**
 * Applies one `message_events` input to the message's current row (`current`, undefined when Sluice holds
 * none). `input` is the producer's object (envelope fields are ignored); `parse` is the dataset's row
 * schema, applied to the whole row, or to the current row merged with the change.
 */
export function applyMessageInput(
  current: CurrentRow | undefined,
  input: Readonly<Record<string, unknown>>,
  parse: ParseCurrentRow,
): MessageDecision {
  const fields: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(input)) if (!ENVELOPE_FIELDS.has(name)) fields[name] = value;
  if (current === undefined) {
    const whole = parse(fields);
    if (whole.ok) return { kind: 'created', row: whole.row, emit: true };
    return {
      kind: 'refused',
      reason:
        `${whole.reason}; message_id: no message with this id was received, so this must be a whole row ` +
        '(send the whole row first, then changes)',
    };
  }
  if (fields.updated_at === undefined || fields.updated_at === null) {
    return { kind: 'refused', reason: 'updated_at: required on a change to a message' };
  }
  const changeAt = timestamp.safeParse(fields.updated_at);
  if (!changeAt.success) {
    return {
      kind: 'refused',
      reason: 'updated_at: must be an ISO 8601 time with a zone, or epoch milliseconds',
    };
  }
  const currentAt = updatedAtMsOf(current);
  if (currentAt !== undefined && Date.parse(changeAt.data) <= currentAt) return { kind: 'out_of_order' };
  const merged = parse({ ...current, ...fields, message_id: current.message_id });
  if (!merged.ok) return { kind: 'refused', reason: merged.reason };
  return { kind: 'changed', row: merged.row, emit: merged.row.status !== current.status };
}

/** What one `project_summary` row does. */
export type ProjectDecision =
  /** First received complete: emitted, and the project is marked exported. */
  | { kind: 'completed' }
  /** Not complete (`completed_at` null): a draft, scheduled or in progress; not emitted (counted). */
  | { kind: 'not_complete' }
  /** Received again after it was emitted complete: not emitted (counted). */
  | { kind: 'after_completion' };

/** Decides a valid `project_summary` row, given whether the project was already emitted complete. */
export function decideProject(row: CurrentRow, alreadyCompleted: boolean): ProjectDecision {
  if (alreadyCompleted) return { kind: 'after_completion' };
  if (row.completed_at === null || row.completed_at === undefined) return { kind: 'not_complete' };
  return { kind: 'completed' };
}

/**
 * The event log id of an emitted row: `<key>@<updated_at ms, 13 digits>` (or `@-` without one), so that
 * emissions of one message recorded in the same millisecond sort in `updated_at` order and the last one
 * is the window's row. Ids are printable ASCII; a key is an id of the row schema.
 */
export function emissionId(key: string, row: CurrentRow): string {
  const ms = updatedAtMsOf(row);
  return `${key}@${ms === undefined ? '-' : String(ms).padStart(13, '0')}`;
}

/**
 * The current-row datasets (semantics `current_row` or `once` in the catalogue) and the field naming a row's
 * message (project): a window holds at most one row per key, the last one recorded in it (the writer keeps
 * it, `latestPerKey` in `@sluice/engine`).
 */
export const CURRENT_ROW_KEYS: Readonly<Record<string, string>> = Object.fromEntries(
  (Object.values(CATALOG) as (DatasetDefinition & { idField?: string })[])
    .filter((definition) => definition.semantics === 'current_row' || definition.semantics === 'once')
    .map((definition) => [definition.name, definition.idField as string]),
);

/** The key field of a current-row dataset, or undefined for an append-only one. */
export function currentRowKeyOf(dataset: string): string | undefined {
  return Object.hasOwn(CURRENT_ROW_KEYS, dataset) ? CURRENT_ROW_KEYS[dataset] : undefined;
}
