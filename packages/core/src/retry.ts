/**
 * The one retry loop and the one backoff of Sluice's own retries (the SDK clients keep their own): exponential
 * from `baseMs`, doubling per retry up to `maxMs`, of which a random part is slept (full jitter), so callers
 * that collided spread out.
 */

/** The backoff of a retry loop. */
export interface Backoff {
  /** The ceiling of the first retry's delay; each retry doubles it. */
  baseMs: number;
  /** The ceiling's cap. */
  maxMs: number;
}

/** The delay before retry `retry` (1 for the first retry): a random part of `min(maxMs, baseMs × 2^(retry-1))`. */
export function backoffDelayMs(retry: number, backoff: Backoff, random: () => number = Math.random): number {
  return Math.floor(random() * Math.min(backoff.maxMs, backoff.baseMs * 2 ** (retry - 1)));
}

/** Waits `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Options of {@link retrying}. */
export interface RetryOptions extends Backoff {
  /** Calls of the attempt, the first included. */
  maxAttempts: number;
  /** For tests: how to wait. @default {@link sleep} */
  sleep?: (ms: number) => Promise<void>;
  /** For tests: the jitter source in [0, 1). @default Math.random */
  random?: () => number;
}

/** What an attempt returns to be called again (after the backoff), while attempts remain. */
export const RETRY: unique symbol = Symbol('retry');

/**
 * Calls `attempt(1)`, `attempt(2)`, … until one returns something other than {@link RETRY} or `maxAttempts`
 * calls were made, sleeping {@link backoffDelayMs} between two calls. Returns the last call's result: a value,
 * or `RETRY` when every call asked for another (the caller says what that means). An attempt that throws
 * ends the loop with its error.
 */
export async function retrying<T>(
  options: RetryOptions,
  attempt: (attemptNumber: number) => Promise<T | typeof RETRY>,
): Promise<T | typeof RETRY> {
  const wait = options.sleep ?? sleep;
  for (let attemptNumber = 1; ; attemptNumber++) {
    const result = await attempt(attemptNumber);
    if (result !== RETRY || attemptNumber >= options.maxAttempts) return result;
    await wait(backoffDelayMs(attemptNumber, options, options.random));
  }
}
