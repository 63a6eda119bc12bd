import { describe, expect, it } from 'vitest';
import { newDestination } from './destination.js';
import { ALL_CHILDREN, childOrganizationsAddedAt } from './organizations.js';

describe('childOrganizationsAddedAt', () => {
  it('keeps the time of an entry that stays, stamps a new one, drops a removed one', () => {
    const previous = { a: '2026-01-01T00:00:00.000Z', b: '2026-01-02T00:00:00.000Z' };

    expect(childOrganizationsAddedAt(previous, ['b', 'c'], '2026-02-01T00:00:00.000Z')).toEqual({
      b: '2026-01-02T00:00:00.000Z',
      c: '2026-02-01T00:00:00.000Z',
    });
    expect(childOrganizationsAddedAt(undefined, [ALL_CHILDREN], '2026-02-01T00:00:00.000Z')).toEqual({
      '*': '2026-02-01T00:00:00.000Z',
    });
    expect(childOrganizationsAddedAt(previous, [], '2026-02-01T00:00:00.000Z')).toEqual({});
  });
});

describe('newDestination with children', () => {
  const base = {
    workspaceId: 'ws',
    id: 'd',
    name: 'n',
    provider: 's3' as const,
    bucket: 'b',
    region: 'us-east-1',
    endpoint: null,
    pathPrefix: '',
    datasets: ['email_events' as const],
    frequency: 'daily' as const,
    startFrom: '2026-01-01T00:00:00.000Z',
    now: new Date('2026-03-01T00:00:00.000Z'),
  };

  it('starts the children of the create at startFrom, like its datasets', () => {
    const destination = newDestination({ ...base, childOrganizations: ['c1', 'c2'] });

    expect(destination.childOrganizations).toEqual(['c1', 'c2']);
    expect(destination.childOrganizationsAddedAt).toEqual({
      c1: '2026-01-01T00:00:00.000Z',
      c2: '2026-01-01T00:00:00.000Z',
    });
  });

  it('stores nothing without children', () => {
    for (const destination of [newDestination(base), newDestination({ ...base, childOrganizations: [] })]) {
      expect(destination).not.toHaveProperty('childOrganizations');
      expect(destination).not.toHaveProperty('childOrganizationsAddedAt');
    }
  });
});
