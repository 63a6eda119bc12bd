import { describe, expect, it } from 'vitest';
import { createProgress, duration, type ProgressStream } from './progress.js';

/** A fake stream and a clock moved by hand. */
function setup(isTTY: boolean) {
  const writes: string[] = [];
  const stream: ProgressStream = { isTTY, columns: 120, write: (text: string) => writes.push(text) };
  const clock = { ms: 1_000_000 };
  return { writes, stream, clock, now: () => clock.ms };
}

describe('progress', () => {
  it('on a terminal redraws one bar in place, at most every redrawMs, and ends its line when finished', () => {
    // Prepare
    const { writes, stream, clock, now } = setup(true);
    const progress = createProgress({ unit: 'events', total: 1_000, stream, now, redrawMs: 100 });

    // Act
    clock.ms += 50;
    progress.update(100); // too soon: not drawn
    clock.ms += 950; // one second in
    progress.update(500);
    clock.ms += 1_000;
    progress.update(1_000);
    progress.finish();
    progress.finish();

    // Assess
    expect(writes).toEqual([
      `\r\x1b[2K[${'#'.repeat(12)}${'.'.repeat(12)}] 500 of 1,000 events (50%), 500 rows/s, 1s left`,
      `\r\x1b[2K[${'#'.repeat(24)}] 1,000 of 1,000 events (100%), 500 rows/s, 0s left`,
      `\r\x1b[2K[${'#'.repeat(24)}] 1,000 of 1,000 events (100%), 500 rows/s in 2s\n`,
    ]);
  });

  it('elsewhere writes plain lines every lineMs and a last one, without control characters', () => {
    // Prepare
    const { writes, stream, clock, now } = setup(false);
    const progress = createProgress({ unit: 'lines', stream, now, lineMs: 5_000 });

    // Act
    for (let second = 1; second <= 12; second++) {
      clock.ms += 1_000;
      progress.update(second * 2_000, second / 12);
    }
    progress.finish();

    // Assess
    expect(writes).toEqual([
      '10,000 lines (41%), 2,000 rows/s, 7s left\n',
      '20,000 lines (83%), 2,000 rows/s, 2s left\n',
      '24,000 lines (100%), 2,000 rows/s in 12s\n',
    ]);
    expect(writes.join('')).not.toContain('\r');
    expect(writes.join('')).not.toContain('\x1b');
  });

  it('formats durations', () => {
    expect([duration(4.4), duration(185), duration(3_720)]).toEqual(['4s', '3m 05s', '1h 02m']);
  });
});
