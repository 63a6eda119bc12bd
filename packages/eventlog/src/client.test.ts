import { describe, expect, it } from 'vitest';
import { parseEventRetentionDays, resolveRetentionSeconds } from './client.js';

describe('event retention', () => {
  it('reads a deployment setting in days: 35 when unset, a whole number from 1 otherwise', () => {
    expect(parseEventRetentionDays(undefined)).toBe(35 * 86_400);
    expect(parseEventRetentionDays('')).toBe(35 * 86_400);
    expect(parseEventRetentionDays('60')).toBe(60 * 86_400);
    expect(parseEventRetentionDays('1')).toBe(86_400);
    for (const bad of ['0', '-7', '31.5', 'forever'])
      expect(() => parseEventRetentionDays(bad)).toThrow(
        /SLUICE_EVENT_RETENTION_DAYS must be a whole number of days from 1/,
      );
  });

  it('lets a writer use any positive whole number of seconds, 35 days by default', () => {
    expect(resolveRetentionSeconds(undefined)).toBe(35 * 86_400);
    expect(resolveRetentionSeconds(120)).toBe(120);
    for (const bad of [0, -1, 1.5])
      expect(() => resolveRetentionSeconds(bad)).toThrow(/positive whole number/);
  });
});
