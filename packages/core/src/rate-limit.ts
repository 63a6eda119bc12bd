/**
 * A per-caller rate limit as one number: the generic cell rate algorithm (GCRA), the token bucket written as
 * the "theoretical arrival time" (TAT) of the next request. Pure arithmetic; the control table stores the TAT
 * on each API key item and moves it with one conditional write per request.
 *
 * With an interval `T = 1000 / ratePerSecond` ms, a request at `now` is allowed when
 * `max(tat, now) + T - now <= burst * T`, and then `tat = max(tat, now) + T`. So an idle caller may send
 * `burst` requests at once, then one every `T`: the same rate-and-burst meaning as API Gateway's throttling.
 */

/** Requests per second, and how many may come at once after a quiet spell. */
export interface RateLimit {
  /** Steady requests per second, a whole number from 1. */
  ratePerSecond: number;
  /** Requests allowed at once, at least 1. */
  burst: number;
}

/**
 * What to do with one request, given the stored TAT (epoch ms, `undefined` before the first request):
 * - `start`: the caller was idle (`tat < now`): set `tat = newTat` if it is still below `now`;
 * - `continue`: the caller is within its burst: add `intervalMs` to `tat` if `now <= tat <= maxTat`;
 * - `limited`: refuse; a retry succeeds after `retryAfterMs`.
 * The conditions let a store apply the step with one conditional write and detect a concurrent change.
 */
export type RateStep =
  | { kind: 'start'; newTat: number }
  | { kind: 'continue'; intervalMs: number; maxTat: number }
  | { kind: 'limited'; retryAfterMs: number };

/** Milliseconds between two requests at the steady rate (at least 1). */
export function rateIntervalMs(limit: RateLimit): number {
  return Math.max(1, Math.round(1000 / limit.ratePerSecond));
}

/** The step for a request at `nowMs` against the stored TAT; see {@link RateStep}. */
export function nextRateStep(tat: number | undefined, nowMs: number, limit: RateLimit): RateStep {
  const interval = rateIntervalMs(limit);
  if (tat === undefined || tat < nowMs) return { kind: 'start', newTat: nowMs + interval };
  const maxTat = nowMs + (limit.burst - 1) * interval;
  if (tat <= maxTat) return { kind: 'continue', intervalMs: interval, maxTat };
  return { kind: 'limited', retryAfterMs: tat - maxTat };
}

/** Whole seconds for a `Retry-After` header: at least 1. */
export function retryAfterSeconds(retryAfterMs: number): number {
  return Math.max(1, Math.ceil(retryAfterMs / 1000));
}

/** Refuses a limit that is not whole, positive numbers (a settings typo must not switch the limit off). */
export function assertRateLimit(limit: RateLimit): RateLimit {
  const valid = (n: number) => Number.isInteger(n) && n >= 1;
  if (!valid(limit.ratePerSecond) || !valid(limit.burst)) {
    throw new Error(
      `A rate limit needs whole numbers from 1, got ${limit.ratePerSecond}/s with a burst of ${limit.burst}`,
    );
  }
  return limit;
}
