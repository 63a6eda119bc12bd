/**
 * One list of error names: every Retry of every workflow reads the engine's transient list, and every name a
 * Retry or Catch matches is one the engine (or Step Functions itself) can raise.
 */
import { PERMANENT_ERROR_NAMES, TRANSIENT_ERROR_NAMES } from '@sluice/engine';
import { beforeAll, describe, expect, it } from 'vitest';
import { type CloudFormationTemplate, definitionsFromTemplates } from '@sluice/devstack';
import { synthesize } from './helpers.js';

interface Matcher {
  ErrorEquals: string[];
}
interface StateJson {
  Resource?: string;
  Retry?: Matcher[];
  Catch?: Matcher[];
  States?: Record<string, StateJson>;
  ItemProcessor?: { States: Record<string, StateJson> };
  Iterator?: { States: Record<string, StateJson> };
}

/** A Task that invokes one of Sluice's functions (not a Step Functions service integration). */
function invokesFunction(state: StateJson): boolean {
  return typeof state.Resource === 'string' && !state.Resource.startsWith('arn:aws:states:::');
}

/** Every state of a definition, nested ones (Map item processors) included, by name. */
function allStates(states: Record<string, StateJson>): [string, StateJson][] {
  return Object.entries(states).flatMap(([name, state]) => [
    [name, state] as [string, StateJson],
    ...allStates(state.ItemProcessor?.States ?? state.Iterator?.States ?? state.States ?? {}),
  ]);
}

describe('the workflows read one list of error names', () => {
  let states: [string, StateJson][];
  beforeAll(() => {
    const built = synthesize();
    const definitions = definitionsFromTemplates([
      built.statefulTemplate.toJSON() as CloudFormationTemplate,
      built.statelessTemplate.toJSON() as CloudFormationTemplate,
    ]);
    states = [
      ...allStates(definitions.exportRun.States as unknown as Record<string, StateJson>),
      ...allStates(definitions.dispatch.States as unknown as Record<string, StateJson>),
    ].filter(([, state]) => invokesFunction(state));
  }, 120_000);

  it('every Retry of a function task, in ExportRun and Dispatch, matches exactly the transient list', () => {
    // Act
    const retries = states.flatMap(([name, state]) =>
      (state.Retry ?? []).map((retry) => ({ name, errors: [...retry.ErrorEquals].sort() })),
    );

    // Assess
    expect(retries.map((retry) => retry.name)).toEqual(
      expect.arrayContaining(['ClaimAndPlan', 'WriteWindow', 'FindDueDestinations']),
    );
    for (const retry of retries)
      expect(retry, retry.name).toEqual({ name: retry.name, errors: [...TRANSIENT_ERROR_NAMES].sort() });
  });

  it('no Catch or Retry of a function task names an error outside the lists (States.* aside)', () => {
    // Prepare
    const known = new Set([...TRANSIENT_ERROR_NAMES, ...PERMANENT_ERROR_NAMES]);

    // Act
    const unknown = states.flatMap(([name, state]) =>
      [...(state.Retry ?? []), ...(state.Catch ?? [])]
        .flatMap((matcher) => matcher.ErrorEquals)
        .filter((error) => !known.has(error) && !error.startsWith('States.'))
        .map((error) => `${name}: ${error}`),
    );

    // Assess
    expect(unknown).toEqual([]);
  });
});
