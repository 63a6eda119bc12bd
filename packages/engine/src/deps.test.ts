import { describe, expect, it } from 'vitest';
import { type EngineDeps, engineDeps, resolveDeps } from './deps.js';

/** A stand-in for a store: only its presence matters here. */
const present = {} as never;

describe('engineDeps', () => {
  it('fails where the engine is built, naming every missing dependency and the use cases needing it', () => {
    // Act + Assess
    expect(() => engineDeps({ controlStore: present, cursors: present }, ['writeWindow'])).toThrow(
      'The engine needs backfills (writeWindow), sealer (writeWindow), eventSource (writeWindow), ' +
        'organizations (writeWindow): ' +
        'the entry point builds them from its configuration.',
    );
    expect(() => engineDeps({}, ['commitRun', 'recordFailure'])).toThrow(
      /notices \(commitRun, recordFailure\)/,
    );
  });

  it("asks for the organisation store where a parent export's links are read: ClaimAndPlan and Dispatch", () => {
    // Prepare: every other store the two use cases need
    const stores: Partial<EngineDeps> = {
      controlStore: present,
      leases: present,
      cursors: present,
      runs: present,
      runState: present,
      backfills: present,
      dueIndex: present,
      eventSource: present,
    };
    // Act + Assess: linksOf (planning, a backfill's plan) and needsRun (Dispatch) read organizations
    expect(() => engineDeps(stores, ['claimAndPlan', 'findDueDestinations'])).toThrow(
      'The engine needs organizations (claimAndPlan, findDueDestinations): ' +
        'the entry point builds them from its configuration.',
    );
    expect(
      engineDeps({ ...stores, organizations: present }, ['claimAndPlan', 'findDueDestinations']),
    ).toEqual({
      ...stores,
      organizations: present,
    });
  });

  it('returns the injected dependencies when each needed one is there; the defaults stay optional', () => {
    // Prepare
    const injected: Partial<EngineDeps> = {
      controlStore: present,
      cursors: present,
      backfills: present,
      sealer: present,
      eventSource: present,
      organizations: present,
    };
    // Act
    const deps = engineDeps(injected, ['writeWindow']);
    // Assess: settings, the bucket writer, metrics and the clock come from the defaults
    expect(deps).toBe(injected);
    expect(resolveDeps(deps).settings.runBudgetMs).toBe(180_000);
  });
});
