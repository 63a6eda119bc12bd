/**
 * Defects of the "Where features meet" issues not yet fixed on this branch, each with the oracle check it trips.
 * `sim.test.ts` tolerates violations of exactly these checks (and fails on any other); the lead removes an
 * entry when its fix merges, and the fixed-seed test then holds the fix.
 */
import type { Check } from './oracle.js';

export interface KnownDefect {
  /** `<issue>.<defect>` */
  defect: string;
  what: string;
  checks: Check[];
}

export const KNOWN_DEFECTS: readonly KnownDefect[] = [
  { defect: '21.1', what: 'backfills overwrite delivered files with fewer rows', checks: ['shrink'] },
  {
    defect: '21.2',
    what: 'Parquet exports switch to JSON lines after a partial run',
    checks: ['format', 'manifest'],
  },
  { defect: '21.3', what: "backfills ignore the export's format", checks: ['format', 'manifest'] },
  {
    defect: '21.15',
    what: "rows recorded before an export's or dataset's start are exported",
    checks: ['before-start'],
  },
  {
    defect: '22.11',
    what: 'a frequency change writes an off-grid window; a backfill after it duplicates rows',
    checks: ['grid', 'exactly-once'],
  },
];

/** The checks the fixed-seed test tolerates. */
export function toleratedChecks(): ReadonlySet<Check> {
  return new Set(KNOWN_DEFECTS.flatMap((defect) => defect.checks));
}
