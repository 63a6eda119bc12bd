import { FREQUENCY_MS, type Frequency } from './datasets.js';
import type { Schedule } from './run-hour.js';
import { EXPORT_LAG_MS } from './windows.js';

/**
 * When a destination runs: its scheduled slots are `offset + k × period` (epoch milliseconds), where the
 * period is its frequency and the offset is a stable function of its id. Slots aligned to UTC would make
 * every destination of a frequency due in the same Dispatch tick (every `every_15_minutes` destination at
 * :00, :15, :30, :45); the offsets spread them over the period instead, the same way at every run.
 *
 * Offsets are whole minutes: Dispatch ticks every minute, so a finer offset would not spread the load
 * further.
 */

const MINUTE_MS = 60_000;

/**
 * `daily` slots fall within this long, starting {@link DAILY_SLOT_START_MS} after the UTC midnight. A daily
 * export writes the UTC day that just ended, which is complete (late writes included) only `EXPORT_LAG_MS`
 * after the midnight; spreading over the whole day would deliver some destinations' days up to 24 hours
 * late, so the spread is bounded to one hour: 60 one-minute slots.
 */
export const DAILY_SLOT_SPREAD_MS = 60 * MINUTE_MS;

/** The earliest `daily` slot after a UTC midnight: the day before is then complete. */
export const DAILY_SLOT_START_MS = EXPORT_LAG_MS;

/**
 * A 32-bit hash of a string: FNV-1a over its UTF-16 code units, then the MurmurHash3 finalizer so that
 * every bit of the result depends on every character (ids that differ in one character land far apart).
 */
export function hash32(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}

/**
 * The destination's offset within its frequency's period, in whole minutes: `[0, period)` for the
 * frequencies of an hour or less, `[DAILY_SLOT_START_MS, DAILY_SLOT_START_MS + DAILY_SLOT_SPREAD_MS)` after
 * the UTC midnight for `daily`. Depends only on the id and the frequency.
 */
export function slotOffsetMs(frequency: Frequency, destinationId: string): number {
  const hash = hash32(destinationId);
  if (frequency === 'daily') {
    return DAILY_SLOT_START_MS + (hash % (DAILY_SLOT_SPREAD_MS / MINUTE_MS)) * MINUTE_MS;
  }
  return (hash % (FREQUENCY_MS[frequency] / MINUTE_MS)) * MINUTE_MS;
}

/**
 * The destination's first scheduled slot strictly after `nowMs`: the smallest `offset + k × period`
 * greater than `nowMs`, so it is at most one period away. A `schedule` (hourly and daily: the chosen minute,
 * and hour) replaces the spread offset ({@link runOffsetMs}).
 */
export function nextSlotAfter(
  nowMs: number,
  frequency: Frequency,
  destinationId: string,
  schedule?: { minute: number; hour?: number } | null,
): number {
  const period = FREQUENCY_MS[frequency];
  const offset = runOffsetMs(frequency, destinationId, schedule);
  return Math.floor((nowMs - offset) / period) * period + offset + period;
}

/**
 * Where in its frequency's period a destination runs: the schedule's minute (and hour, daily) when it has
 * one, else the spread slot of its id (`slotOffsetMs`). `schedule` is only kept for `hourly` and `daily`.
 */
export function runOffsetMs(
  frequency: Frequency,
  destinationId: string,
  schedule: Schedule | null | undefined,
): number {
  if (schedule === null || schedule === undefined) return slotOffsetMs(frequency, destinationId);
  if (frequency === 'daily') return ((schedule.hour ?? 0) * 60 + schedule.minute) * 60_000;
  return (schedule.minute * 60_000) % FREQUENCY_MS[frequency];
}
