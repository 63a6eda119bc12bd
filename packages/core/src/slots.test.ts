import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FREQUENCIES, FREQUENCY_MS, type Frequency } from './datasets.js';
import { DAILY_SLOT_SPREAD_MS, DAILY_SLOT_START_MS, hash32, nextSlotAfter, slotOffsetMs } from './slots.js';

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;
/** Instants from 2020 to 2040. */
const instant = fc.integer({
  min: Date.parse('2020-01-01T00:00:00Z'),
  max: Date.parse('2040-01-01T00:00:00Z'),
});
const frequency = fc.constantFrom(...FREQUENCIES);
const destinationId = fc.string({ minLength: 1, maxLength: 200 });

describe('nextSlotAfter', () => {
  it('is after now and at most one period away', () => {
    fc.assert(
      fc.property(instant, frequency, destinationId, (nowMs, f, id) => {
        const next = nextSlotAfter(nowMs, f, id);
        expect(next).toBeGreaterThan(nowMs);
        expect(next - nowMs).toBeLessThanOrEqual(FREQUENCY_MS[f]);
      }),
    );
  });

  it('lies on the destination grid offset + k × period, whatever now is', () => {
    fc.assert(
      fc.property(instant, instant, frequency, destinationId, (a, b, f, id) => {
        const offset = slotOffsetMs(f, id);
        const period = FREQUENCY_MS[f];
        for (const next of [nextSlotAfter(a, f, id), nextSlotAfter(b, f, id)]) {
          expect((((next - offset) % period) + period) % period).toBe(0);
        }
      }),
    );
  });

  it('steps exactly one period from one slot to the next, and any instant of a period gives the same slot', () => {
    fc.assert(
      fc.property(instant, frequency, destinationId, (nowMs, f, id) => {
        const next = nextSlotAfter(nowMs, f, id);
        const period = FREQUENCY_MS[f];
        expect(nextSlotAfter(next, f, id)).toBe(next + period);
        expect(nextSlotAfter(next - period, f, id)).toBe(next);
        expect(nextSlotAfter(next - 1, f, id)).toBe(next);
      }),
    );
  });

  it('runs daily destinations in the first hour after midnight plus the lag, when the day before is complete', () => {
    fc.assert(
      fc.property(instant, destinationId, (nowMs, id) => {
        const sinceMidnight = nextSlotAfter(nowMs, 'daily', id) % DAY_MS;
        expect(sinceMidnight).toBeGreaterThanOrEqual(DAILY_SLOT_START_MS);
        expect(sinceMidnight).toBeLessThan(DAILY_SLOT_START_MS + DAILY_SLOT_SPREAD_MS);
      }),
    );
  });
});

describe('slotOffsetMs', () => {
  it('is whole minutes inside the period (the first hour for daily) and stable for an id', () => {
    fc.assert(
      fc.property(frequency, destinationId, (f, id) => {
        const offset = slotOffsetMs(f, id);
        expect(offset % MINUTE_MS).toBe(0);
        expect(offset).toBeGreaterThanOrEqual(0);
        expect(offset).toBeLessThan(
          f === 'daily' ? DAILY_SLOT_START_MS + DAILY_SLOT_SPREAD_MS : FREQUENCY_MS[f],
        );
        expect(slotOffsetMs(f, id)).toBe(offset);
      }),
    );
  });

  it.each([
    ['every_5_minutes', 5],
    ['every_15_minutes', 15],
    ['hourly', 60],
    ['daily', 60],
  ] as [Frequency, number][])('spreads %s destinations evenly over its %i one-minute slots', (f, slots) => {
    // Prepare: sequential ids, the worst case for a weak hash
    const perSlot = new Map<number, number>();
    const ids = 300 * slots;
    // Act
    for (let i = 0; i < ids; i++) {
      const offset = slotOffsetMs(f, `dst_${i.toString().padStart(6, '0')}`);
      perSlot.set(offset, (perSlot.get(offset) ?? 0) + 1);
    }
    // Assess: every slot used, none above 1.25× or below 0.75× of the average of 300
    expect(perSlot.size).toBe(slots);
    for (const count of perSlot.values()) {
      expect(count).toBeGreaterThan(225);
      expect(count).toBeLessThan(375);
    }
  });
});

describe('hash32', () => {
  it('is an unsigned 32-bit integer that changes when one character does', () => {
    expect(hash32('dst_000001')).not.toBe(hash32('dst_000002'));
    fc.assert(
      fc.property(fc.string(), (text) => {
        const hash = hash32(text);
        expect(Number.isInteger(hash)).toBe(true);
        expect(hash).toBeGreaterThanOrEqual(0);
        expect(hash).toBeLessThan(2 ** 32);
      }),
    );
  });
});
