import { describe, expect, it } from 'vitest';
import { PERMANENT_ERROR_NAMES, TRANSIENT_ERROR_NAMES } from './errors.js';
import { DESTINATION_FAILURE_NAMES, failureCause } from './metrics.js';

describe('failureCause', () => {
  it('puts every permanent error on the destination: the customer fixes it', () => {
    // Act
    const causes = PERMANENT_ERROR_NAMES.map(failureCause);

    // Assess
    expect(new Set(causes)).toEqual(new Set(['destination']));
  });

  it("puts the customer's store failing after the retries on the destination, and the rest on Sluice", () => {
    // Act
    const byName = Object.fromEntries(
      [...TRANSIENT_ERROR_NAMES, 'States.Timeout', 'Sandbox.Timedout', 'TypeError'].map((name) => [
        name,
        failureCause(name),
      ]),
    );

    // Assess
    expect(
      Object.keys(byName)
        .filter((name) => byName[name] === 'destination')
        .sort(),
    ).toEqual(['BucketServerError', 'BucketThrottled', 'BucketUnknownError', 'BucketUnreachable']);
    expect(byName.DatabaseUnavailableError).toBe('sluice');
    expect(failureCause(undefined)).toBe('sluice');
  });

  it('names only errors the engine can raise', () => {
    // Assess
    const known = new Set([...PERMANENT_ERROR_NAMES, ...TRANSIENT_ERROR_NAMES]);
    expect(DESTINATION_FAILURE_NAMES.filter((name) => !known.has(name))).toEqual([]);
  });
});
