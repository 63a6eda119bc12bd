import { describe, expect, it } from 'vitest';
import { availableFromMs } from './plan.js';

const HOUR = 3_600_000;
const NOW = Date.UTC(2026, 11, 3, 12, 0, 0);

describe('availableFromMs: how far back an export can still read', () => {
  it('is the hot log horizon (on the grid) without an archive', () => {
    expect(availableFromMs(NOW, 5 * HOUR + 60_000, HOUR, undefined)).toBe(NOW - 6 * HOUR - 1);
  });

  it('is the archive start (on the grid) when the archive reaches the hot log', () => {
    const archive = { startMs: NOW - 48 * HOUR, throughMs: NOW - 4 * HOUR };
    expect(availableFromMs(NOW, 5 * HOUR, HOUR, archive)).toBe(NOW - 48 * HOUR - 1);
  });

  it('is the hot log horizon when the archive stopped before it (rows between them are gone)', () => {
    const archive = { startMs: NOW - 48 * HOUR, throughMs: NOW - 6 * HOUR };
    expect(availableFromMs(NOW, 5 * HOUR, HOUR, archive)).toBe(NOW - 5 * HOUR - 1);
  });
});
