import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  assertRateLimit,
  nextRateStep,
  type RateLimit,
  rateIntervalMs,
  retryAfterSeconds,
} from './rate-limit.js';

/** Applies a step as the store does; returns the new TAT, or undefined when refused. */
function apply(tat: number | undefined, nowMs: number, limit: RateLimit): number | undefined {
  const step = nextRateStep(tat, nowMs, limit);
  if (step.kind === 'start') return step.newTat;
  if (step.kind === 'continue') return (tat as number) + step.intervalMs;
  return undefined;
}

describe('nextRateStep', () => {
  const limit: RateLimit = { ratePerSecond: 10, burst: 3 };
  const t0 = Date.parse('2026-12-03T12:00:00.000Z');

  it('allows a burst at once, then refuses with the wait until the next slot', () => {
    // Prepare
    let tat: number | undefined;
    const outcomes: string[] = [];

    // Act
    for (let i = 0; i < 4; i++) {
      const step = nextRateStep(tat, t0, limit);
      outcomes.push(step.kind);
      tat = apply(tat, t0, limit) ?? tat;
    }

    // Assess
    expect(outcomes).toEqual(['start', 'continue', 'continue', 'limited']);
    expect(nextRateStep(tat, t0, limit)).toEqual({ kind: 'limited', retryAfterMs: 100 });
    expect(nextRateStep(tat, t0 + 100, limit).kind).toBe('continue');
  });

  it('starts afresh after a quiet spell', () => {
    expect(nextRateStep(t0 + 50, t0 + 51, limit)).toEqual({ kind: 'start', newTat: t0 + 151 });
  });

  it('never allows more than burst + rate × elapsed requests (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 1, max: 20 }),
        fc.array(fc.integer({ min: 0, max: 400 }), { minLength: 1, maxLength: 300 }),
        (ratePerSecond, burst, gaps) => {
          const rate = { ratePerSecond, burst };
          let now = t0;
          let tat: number | undefined;
          let allowed = 0;
          for (const gap of gaps) {
            now += gap;
            const next = apply(tat, now, rate);
            if (next !== undefined) {
              tat = next;
              allowed++;
            }
          }
          const elapsed = now - t0;
          return allowed <= burst + Math.floor(elapsed / rateIntervalMs(rate));
        },
      ),
    );
  });

  it('always allows a request spaced one interval after the last allowed one (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1000 }),
        fc.integer({ min: 1, max: 50 }),
        (ratePerSecond, burst) => {
          const rate = { ratePerSecond, burst };
          let now = t0;
          let tat: number | undefined;
          for (let i = 0; i < 20; i++) {
            const next = apply(tat, now, rate);
            if (next === undefined) return false;
            tat = next;
            now += rateIntervalMs(rate);
          }
          return true;
        },
      ),
    );
  });
});

describe('retryAfterSeconds and assertRateLimit', () => {
  it('rounds the wait up to whole seconds, at least 1', () => {
    expect([0, 1, 1000, 1001].map(retryAfterSeconds)).toEqual([1, 1, 1, 2]);
  });

  it.each([
    { ratePerSecond: 0, burst: 1 },
    { ratePerSecond: 1.5, burst: 2 },
    { ratePerSecond: 10, burst: Number.NaN },
  ])('refuses %j', (limit) => {
    expect(() => assertRateLimit(limit)).toThrow('whole numbers from 1');
  });
});
