/**
 * The shapes of the ids the Data Exports API hands out, shared by the API (an id of another shape names
 * nothing: 404 without a read) and its clients (the CLI and the MCP tools refuse one before sending it).
 * Neither shape has a `.`, a `/` or a `%`, so an id put in a URL path is always exactly one segment.
 */

/** A data export (destination) id: `exp_` and 24 hex digits when the API makes it (test set-ups use shorter ones). */
export const DESTINATION_ID_RE = /^exp_[A-Za-z0-9_-]{1,64}$/;

/** A backfill id: `bf_` and 24 hex digits (see `backfillId`). */
export const BACKFILL_ID_RE = /^bf_[0-9a-f]{24}$/;

/** Why `value` is not a data export id, for a usage error; undefined when it is one. */
export function destinationIdProblem(value: string): string | undefined {
  return DESTINATION_ID_RE.test(value)
    ? undefined
    : `${JSON.stringify(value)} is not a data export id: one looks like exp_0123456789abcdef01234567 (exp_ and letters, digits, _ or -).`;
}

/** Why `value` is not a backfill id, for a usage error; undefined when it is one. */
export function backfillIdProblem(value: string): string | undefined {
  return BACKFILL_ID_RE.test(value)
    ? undefined
    : `${JSON.stringify(value)} is not a backfill id: one looks like bf_0123456789abcdef01234567 (bf_ and 24 hex digits).`;
}
