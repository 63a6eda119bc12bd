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

export const KNOWN_DEFECTS: readonly KnownDefect[] = [];

/** The checks the fixed-seed test tolerates. */
export function toleratedChecks(): ReadonlySet<Check> {
  return new Set(KNOWN_DEFECTS.flatMap((defect) => defect.checks));
}
