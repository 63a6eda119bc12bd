import { describe, expect, it } from 'vitest';
import {
  hasIncludedChildren,
  includedOrganizations,
  includesChildren,
  organizationIntervals,
  plannedOrganizations,
} from './included-organizations.js';
import { eventFileKey } from './layout.js';
import { type ChildLink, childOrganizationsAddedAt, childOrganizationsRemoved } from './organizations.js';
import { recipesFor, schemaKeyOf } from './recipes.js';
import { buildManifest, manifestKey } from './manifest.js';
import { erasAfterPlanning, groupEraWindows, historyEras, windowsOfEras } from './windows.js';

const T = Date.parse('2026-10-01T00:00:00.000Z');
const MIN = 60_000;
const HOUR = 60 * MIN;
const iso = (ms: number) => new Date(ms).toISOString();
const link = (childId: string, linkedMs: number, unlinkedMs: number | null = null): ChildLink => ({
  parentId: 'ws_parent',
  childId,
  linkedAt: iso(linkedMs),
  unlinkedAt: unlinkedMs === null ? null : iso(unlinkedMs),
});
const hour = { fromMs: T - 1, toMs: T + HOUR - 1 };

describe('includedOrganizations', () => {
  it('reads only the parent when the list of children is empty or absent', () => {
    const links = [link('ws_a', T - HOUR)];
    expect(includedOrganizations({ workspaceId: 'ws_parent' }, links, hour)).toEqual([{ id: 'ws_parent' }]);
    expect(includedOrganizations({ workspaceId: 'ws_parent', childOrganizations: [] }, links, hour)).toEqual([
      { id: 'ws_parent' },
    ]);
    expect(includesChildren({ childOrganizations: [] })).toBe(false);
    expect(includesChildren({ childOrganizations: ['*'] })).toBe(true);
  });

  it('includes the chosen children linked before the range whole, the parent first, by id', () => {
    const destination = {
      workspaceId: 'ws_parent',
      childOrganizations: ['ws_b', 'ws_a'],
      childOrganizationsAddedAt: { ws_a: iso(T - HOUR), ws_b: iso(T - HOUR) },
    };
    const links = [link('ws_b', T - 2 * HOUR), link('ws_c', T - 2 * HOUR), link('ws_a', T - 2 * HOUR)];
    expect(includedOrganizations(destination, links, hour)).toEqual([
      { id: 'ws_parent' },
      { id: 'ws_a' },
      { id: 'ws_b' },
    ]);
  });

  it("starts a child at the later of its link and its entry's addition, exactly, inside the range", () => {
    const destination = {
      workspaceId: 'ws_parent',
      childOrganizations: ['ws_a', 'ws_b'],
      childOrganizationsAddedAt: { ws_a: iso(T + 10 * MIN), ws_b: iso(T - HOUR) },
    };
    const links = [link('ws_a', T - HOUR), link('ws_b', T + 20 * MIN)];
    expect(includedOrganizations(destination, links, hour)).toEqual([
      { id: 'ws_parent' },
      { id: 'ws_a', startMs: T + 10 * MIN },
      { id: 'ws_b', startMs: T + 20 * MIN },
    ]);
    // A start at the range's end: nothing of the child in the range
    const later = includedOrganizations(destination, [link('ws_a', hour.toMs)], hour);
    expect(later).toEqual([{ id: 'ws_parent' }]);
  });

  it("under '*' includes every child from the later of its link and the '*' entry's addition", () => {
    const destination = {
      workspaceId: 'ws_parent',
      childOrganizations: ['*'],
      childOrganizationsAddedAt: { '*': iso(T + 5 * MIN) },
    };
    const links = [link('ws_old', T - HOUR), link('ws_new', T + 30 * MIN)];
    expect(includedOrganizations(destination, links, hour)).toEqual([
      { id: 'ws_parent' },
      { id: 'ws_new', startMs: T + 30 * MIN },
      { id: 'ws_old', startMs: T + 5 * MIN },
    ]);
  });

  it("takes the earlier of a child's own entry and '*' when both name it", () => {
    const destination = {
      workspaceId: 'ws_parent',
      childOrganizations: ['*', 'ws_a'],
      childOrganizationsAddedAt: { '*': iso(T + 40 * MIN), ws_a: iso(T + 10 * MIN) },
    };
    expect(includedOrganizations(destination, [link('ws_a', T - HOUR)], hour)).toEqual([
      { id: 'ws_parent' },
      { id: 'ws_a', startMs: T + 10 * MIN },
    ]);
  });

  it('stops a child at its unlink time and leaves out one unlinked before the range', () => {
    const destination = { workspaceId: 'ws_parent', childOrganizations: ['*'] };
    const links = [link('ws_a', T - HOUR, T + 15 * MIN), link('ws_b', T - 2 * HOUR, T - 1)];
    expect(includedOrganizations(destination, links, hour)).toEqual([
      { id: 'ws_parent' },
      { id: 'ws_a', stopMs: T + 15 * MIN },
    ]);
  });

  it('gives a child unlinked and linked again one entry per link, in order', () => {
    const destination = { workspaceId: 'ws_parent', childOrganizations: ['ws_a'] };
    const links = [link('ws_a', T + 40 * MIN), link('ws_a', T - HOUR, T + 15 * MIN)];
    const included = includedOrganizations(destination, links, hour);
    expect(included).toEqual([
      { id: 'ws_parent' },
      { id: 'ws_a', stopMs: T + 15 * MIN },
      { id: 'ws_a', startMs: T + 40 * MIN },
    ]);
    // The writer reads (from, 15 min] and (40 min, to]: no row of the gap, none twice
    expect(organizationIntervals(included, 'ws_a', hour)).toEqual([
      { fromMs: hour.fromMs, toMs: T + 15 * MIN },
      { fromMs: T + 40 * MIN, toMs: hour.toMs },
    ]);
  });

  it("ignores other parents' links, a link to itself, and children not on the list", () => {
    const destination = { workspaceId: 'ws_parent', childOrganizations: ['ws_a'] };
    const links = [
      { ...link('ws_a', T - HOUR), parentId: 'ws_other' },
      link('ws_parent', T - HOUR),
      link('ws_b', T - HOUR),
    ];
    expect(includedOrganizations(destination, links, hour)).toEqual([{ id: 'ws_parent' }]);
  });

  it('splits a range into consecutive parts without a row twice or lost (start exclusive, stop inclusive)', () => {
    const destination = {
      workspaceId: 'ws_parent',
      childOrganizations: ['*'],
      childOrganizationsAddedAt: { '*': iso(T - 3 * HOUR) },
    };
    const links = [link('ws_a', T + 7 * MIN, T + 52 * MIN), link('ws_a', T + 52 * MIN)];
    const owned = (ms: number, range: { fromMs: number; toMs: number }) =>
      organizationIntervals(includedOrganizations(destination, links, range), 'ws_a', range).some(
        (interval) => interval.fromMs < ms && ms <= interval.toMs,
      );
    const windows = Array.from({ length: 12 }, (_, i) => ({
      fromMs: T - 1 + i * 5 * MIN,
      toMs: T - 1 + (i + 1) * 5 * MIN,
    }));
    for (let ms = T - 1; ms <= T + HOUR; ms += 30_000) {
      const holders = windows.filter((w) => w.fromMs < ms && ms <= w.toMs && owned(ms, w));
      expect(holders.length, iso(ms)).toBe(ms > T + 7 * MIN && ms < T + HOUR ? 1 : 0);
    }
    // At the link time itself: not read; right after: read
    expect(owned(T + 7 * MIN, hour)).toBe(false);
    expect(owned(T + 7 * MIN + 1, hour)).toBe(true);
  });

  it('keeps a child removed from the list for the time before the removal, exactly, in windows planned after it', () => {
    // A listed from T - 3 h; removed at T + 20 min; B listed at T - 3 h, removed at T + 10 min, added again at T + 40 min
    const addedAt = { ws_a: iso(T - 3 * HOUR), ws_b: iso(T - 3 * HOUR) };
    const afterRemovals = (() => {
      const first = {
        childOrganizations: ['ws_a'],
        removed: childOrganizationsRemoved(undefined, addedAt, ['ws_a'], iso(T + 10 * MIN)),
      };
      const removed = childOrganizationsRemoved(first.removed, { ws_a: addedAt.ws_a }, [], iso(T + 20 * MIN));
      const again = childOrganizationsAddedAt({}, ['ws_b'], iso(T + 40 * MIN));
      return {
        workspaceId: 'ws_parent',
        childOrganizations: ['ws_b'],
        childOrganizationsAddedAt: again,
        childOrganizationsRemoved: childOrganizationsRemoved(removed, {}, ['ws_b'], iso(T + 40 * MIN)),
      };
    })();
    expect(afterRemovals.childOrganizationsRemoved).toEqual([
      { entry: 'ws_b', addedAt: iso(T - 3 * HOUR), removedAt: iso(T + 10 * MIN) },
      { entry: 'ws_a', addedAt: iso(T - 3 * HOUR), removedAt: iso(T + 20 * MIN) },
    ]);
    const links = [link('ws_a', T - 5 * HOUR), link('ws_b', T - 5 * HOUR)];
    const included = includedOrganizations(afterRemovals, links, hour);
    expect(included).toEqual([
      { id: 'ws_parent' },
      { id: 'ws_a', stopMs: T + 20 * MIN },
      { id: 'ws_b', stopMs: T + 10 * MIN },
      { id: 'ws_b', startMs: T + 40 * MIN },
    ]);
    // Stop inclusive, start exclusive, like an unlink and a link
    const reads = (id: string, ms: number) =>
      organizationIntervals(included, id, hour).some((i) => i.fromMs < ms && ms <= i.toMs);
    expect([T + 20 * MIN, T + 20 * MIN + 1].map((ms) => reads('ws_a', ms))).toEqual([true, false]);
    expect(
      [T + 10 * MIN, T + 25 * MIN, T + 40 * MIN, T + 40 * MIN + 1].map((ms) => reads('ws_b', ms)),
    ).toEqual([true, false, false, true]);
    // Before the range and after the removals: nothing of A; a link after the removal: nothing either
    const later = { fromMs: hour.toMs, toMs: hour.toMs + HOUR };
    expect(includedOrganizations(afterRemovals, links, later).map((o) => o.id)).toEqual([
      'ws_parent',
      'ws_b',
    ]);
    expect(includedOrganizations(afterRemovals, [link('ws_a', T + 30 * MIN)], hour)).toEqual([
      { id: 'ws_parent' },
    ]);
  });

  it('plans windows after the list was emptied partitioned only where a removed child is still included', () => {
    const emptied = {
      workspaceId: 'ws_parent',
      childOrganizations: [],
      childOrganizationsRemoved: [{ entry: '*', addedAt: iso(T - 3 * HOUR), removedAt: iso(T + 20 * MIN) }],
    };
    const links = [link('ws_a', T - 5 * HOUR)];
    expect(hasIncludedChildren(emptied)).toBe(true);
    expect(plannedOrganizations(emptied, links, hour)).toEqual([
      { id: 'ws_parent' },
      { id: 'ws_a', stopMs: T + 20 * MIN },
    ]);
    expect(
      plannedOrganizations(emptied, links, { fromMs: hour.toMs, toMs: hour.toMs + HOUR }),
    ).toBeUndefined();
    expect(plannedOrganizations({ workspaceId: 'ws_parent' }, links, hour)).toBeUndefined();
    // A current list: partitioned even when no child is included in the range
    expect(
      plannedOrganizations({ workspaceId: 'ws_parent', childOrganizations: ['ws_b'] }, links, hour),
    ).toEqual([{ id: 'ws_parent' }]);
  });

  it("clips an organisation's intervals to the export's exact start", () => {
    const included = [{ id: 'ws_parent' }, { id: 'ws_a', startMs: T + 10 * MIN }];
    expect(organizationIntervals(included, 'ws_parent', hour, T + 20 * MIN)).toEqual([
      { fromMs: T + 20 * MIN, toMs: hour.toMs },
    ]);
    expect(organizationIntervals(included, 'ws_a', hour, T + 5 * MIN)).toEqual([
      { fromMs: T + 10 * MIN, toMs: hour.toMs },
    ]);
    expect(organizationIntervals(included, 'ws_b', hour)).toEqual([]);
  });
});

describe('the organisation partition', () => {
  const window = { fromMs: T - 1, toMs: T + HOUR - 1 };

  it('names the files and manifest of each organisation under organization_id=, unchanged without one', () => {
    expect(eventFileKey('p', 'click_events', window, 0)).toBe(
      `p/click_events/date=2026-10-01/click_events-${T - 1}-${T + HOUR - 1}-0000.jsonl.gz`,
    );
    expect(eventFileKey('p', 'click_events', window, 0, undefined, 'ws_a')).toBe(
      `p/click_events/date=2026-10-01/organization_id=ws_a/click_events-${T - 1}-${T + HOUR - 1}-0000.jsonl.gz`,
    );
    expect(manifestKey('p', 'click_events', window, 'ws_a')).toBe(
      `p/_sluice/manifests/click_events/date=2026-10-01/organization_id=ws_a/${T - 1}-${T + HOUR - 1}.json`,
    );
    const manifest = buildManifest({
      dataset: 'click_events',
      window,
      format: 'jsonl',
      files: [],
      organizationId: 'ws_a',
    });
    expect(manifest.organization_id).toBe('ws_a');
    expect(
      'organization_id' in buildManifest({ dataset: 'click_events', window, format: 'jsonl', files: [] }),
    ).toBe(false);
  });

  it('keeps the partition in the eras, so a backfill names windows as they were delivered', () => {
    const jsonl = { format: 'jsonl' as const, compression: 'gzip' as const };
    const eras = erasAfterPlanning(
      [],
      [
        { fromMs: T - 1, toMs: T + HOUR - 1, stepMs: HOUR, format: jsonl },
        {
          fromMs: T + HOUR - 1,
          toMs: T + 2 * HOUR - 1,
          stepMs: HOUR,
          format: jsonl,
          organizations: [{ id: 'ws_parent' }],
        },
      ],
    );
    expect(eras).toEqual([
      { fromMs: T - 1, stepMs: HOUR, format: jsonl },
      { fromMs: T + HOUR - 1, stepMs: HOUR, format: jsonl, partitioned: true },
    ]);
    const history = historyEras(eras, T + 2 * HOUR - 1, { stepMs: HOUR, format: jsonl, partitioned: true });
    const spans = groupEraWindows(windowsOfEras(T - 1, T + 3 * HOUR - 1, history), 8);
    // The first hour as delivered (no partition), the rest partitioned; never one span mixing both
    expect(spans.map((span) => [span.fromMs, span.partitioned ?? false])).toEqual([
      [T - 1, false],
      [T + HOUR - 1, true],
      [T + 2 * HOUR - 1, true],
    ]);
  });
});

describe('the reading recipes of an export partitioned by organisation', () => {
  const input = {
    dataset: 'click_events' as const,
    layout: 'date' as const,
    format: 'parquet' as const,
    bucket: 'b',
    pathPrefix: 'p',
  };

  it('add organization_id as a partition column, read from the path, and leave the rest unchanged', () => {
    const plain = recipesFor(input);
    const partitioned = recipesFor({ ...input, partitioned: true });
    const text = (recipes: typeof plain, engine: string) =>
      recipes.find((recipe) => recipe.engine === engine)?.text ?? '';
    expect(text(partitioned, 'athena')).toContain('PARTITIONED BY (`date` STRING, `organization_id` STRING)');
    expect(text(partitioned, 'athena')).toContain(
      "'storage.location.template' = 's3://b/p/click_events/date=${date}/organization_id=${organization_id}/'",
    );
    expect(text(partitioned, 'athena')).toContain("'projection.organization_id.type' = 'injected'");
    // The file column of the same name is not declared twice
    expect(text(partitioned, 'athena').match(/`organization_id`/g)).toHaveLength(1);
    expect(text(partitioned, 'duckdb')).toContain(
      "read_parquet('s3://b/p/click_events/date=*/organization_id=*/click_events-*.parquet'",
    );
    expect(text(partitioned, 'bigquery')).toContain(
      'WITH PARTITION COLUMNS (`date` STRING, `organization_id` STRING)',
    );
    expect(text(partitioned, 'databricks')).toContain(
      '"cloudFiles.partitionColumns", "date,organization_id"',
    );
    expect(text(plain, 'athena')).not.toContain('organization_id=');
    expect(text(plain, 'duckdb')).toContain(
      "read_parquet('s3://b/p/click_events/date=*/click_events-*.parquet'",
    );
    // run_hour names the organisation in the file name: no partition
    expect(recipesFor({ ...input, layout: 'run_hour', partitioned: true })).toEqual(
      recipesFor({ ...input, layout: 'run_hour' }),
    );
  });

  it('rewrite the schema objects when the list of children becomes empty or not, and only then', () => {
    const destination = { pathPrefix: 'p', format: 'jsonl' as const, datasets: ['click_events' as const] };
    const none = schemaKeyOf(destination);
    expect(schemaKeyOf({ ...destination, childOrganizations: [] })).toBe(none);
    expect(schemaKeyOf({ ...destination, childOrganizations: ['ws_a'] })).not.toBe(none);
    expect(schemaKeyOf({ ...destination, childOrganizations: ['*'] })).toBe(
      schemaKeyOf({ ...destination, childOrganizations: ['ws_a'] }),
    );
  });
});
