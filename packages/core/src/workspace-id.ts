/**
 * The rule for a new workspace id. A workspace id names folders of the event archive
 * (`archive/<workspaceId>/<dataset>/…`) and is a part of every key of the tables, so it holds no `/`, `\`,
 * `#`, spaces or other path or key characters, and a `.` never starts it (no `.` or `..` folder).
 */
export const WORKSPACE_ID_RULE =
  '1 to 128 letters, digits, "_", "-", "." or ":", starting with a letter or digit (no "/", "#" or spaces)';

/** True when `id` may name a new workspace ({@link WORKSPACE_ID_RULE}). */
export function isWorkspaceId(id: unknown): id is string {
  return typeof id === 'string' && /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/.test(id);
}
