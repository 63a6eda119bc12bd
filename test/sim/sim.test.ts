import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BucketObjectView } from './bucket.js';
import { toleratedChecks } from './known-defects.js';
import { createHash } from 'node:crypto';
import { Model, type ModelExport } from './model.js';
import { BucketHistory, checkManifests, checkStep, checkTotals, missingRows } from './oracle.js';

/**
 * The simulation of issue 20 in `npm test`: a few fixed seeds, run on the real engine, workflows and local
 * services under the virtual clock. Violations of the defects listed in `known-defects.ts` are tolerated (they
 * are fixed on other branches); any other violation fails. `npm run sim` runs many more.
 */
/**
 * Short schedules, each one of the generator's recipes (`recipes()` in sim.ts) with its parameters drawn from the
 * seed (`recipeSchedule`: adding an operation or a recipe does not move them), then settled; each catches the
 * defect named with its fix reverted locally (the check that fails in brackets):
 * - partialThenFormat 1: 21.2, `copySpan` dropping `format` [format, exactly-once: a window in both formats
 *   after the full-history backfill; manifest]; 21.3, backfill items planned without `format` [the same];
 * - expiringBackfill 1: 21.1, the backfill's availability check always passing [shrink: a manifest from 10 rows
 *   to 5];
 * - importArchived 1: 21.4, imports not marking the archived hours they write into [archived];
 * - beforeStart 1: 21.15, the writer reading from the cell's start [before-start];
 * - finerThenCoarser 1: 22.11, no alignment after a change to a coarser grid [grid: 09:09:59.999–23:59:59.999
 *   of an every_5_minutes→daily export];
 * - eraseAcross 1: 21.5, the erasure not learning the person's subscriber ids from their e-mail rows [erased:
 *   the archive keeps their custom_events row];
 * - floodBeside 1: 22.6, Dispatch reading only the 100 oldest due backfill entries and not setting aside those
 *   of a paused export [caught-up: the other workspace's backfill never runs];
 * - childOrganization 1: a child organisation's rows delivered while linked and listed, and no others.
 */
const SEEDS: [recipe: string, seed: number][] = [
  ['partialThenFormat', 1],
  ['expiringBackfill', 1],
  ['importArchived', 1],
  ['beforeStart', 1],
  ['finerThenCoarser', 1],
  ['eraseAcross', 1],
  ['floodBeside', 1],
  ['childOrganization', 1],
];

let runSeed: typeof import('./sim.js').runSeed;
let stopSimBucketServer: typeof import('./world.js').stopSimBucketServer;

beforeAll(async () => {
  // The handlers' log lines and metrics are noise here.
  process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';
  process.env.POWERTOOLS_METRICS_DISABLED = 'true';
  ({ runSeed } = await import('./sim.js'));
  ({ stopSimBucketServer } = await import('./world.js'));
});

afterAll(async () => {
  await stopSimBucketServer?.();
  const { uninstallVirtualClock } = await import('./clock.js');
  uninstallVirtualClock();
});

describe('the simulation', () => {
  it.each(SEEDS)(
    'recipe %s at seed %i keeps the export contract, apart from the known defects',
    async (recipe, seed) => {
      const result = await runSeed(seed, 1, { recipe, tolerated: toleratedChecks() });
      expect(
        result.failed
          ? `SLUICE_SIM_SEED=${seed} npm run sim -- --ops 1 --recipe ${recipe}\n${result.schedule}\n${result.error}`
          : 'kept',
      ).toBe('kept');
      // A recipe's operations are steps of their own.
      expect(result.ops).toBeGreaterThan(1);
    },
    900_000,
  );
});

// ---------------------------------------------------------------------------------------------------------
// The oracle's rules on made-up buckets: each must be able to fail.

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 2, 2, 0, 0, 0);

function modelWithExport(): { model: Model; exp: ModelExport } {
  const model = new Model();
  const exp: ModelExport = {
    ref: 0,
    workspace: 0,
    workspaceId: 'ws_0',
    id: 'dest',
    prefix: 'p',
    prefixes: ['p'],
    createdMs: T0 + 90 * 60_000,
    startMs: T0 + 90 * 60_000,
    dueFromMs: T0 + 90 * 60_000,
    frequency: 'hourly',
    frequencies: new Set(['hourly']),
    formats: [{ sinceMs: T0, format: 'jsonl' }],
    configs: [{ sinceMs: T0, layout: 'date', frequency: 'hourly', schedule: null }],
    spreadOffsets: new Map(),
    memberships: new Map([['email_events', [{ addedMs: T0 + 90 * 60_000 }]]]),
    enabled: true,
    deleted: false,
    backfills: [],
  };
  model.exports.push(exp);
  model.rows.set('a', {
    workspace: 0,
    dataset: 'email_events',
    recordedMs: T0 + 80 * 60_000,
    refused: false,
  });
  model.rows.set('b', {
    workspace: 0,
    dataset: 'email_events',
    recordedMs: T0 + 100 * 60_000,
    refused: false,
  });
  return { model, exp };
}

function file(fromMs: number, toMs: number, ids: string[], extension = '.jsonl.gz'): BucketObjectView {
  return {
    key: `p/email_events/date=2026-03-02/email_events-${fromMs}-${toMs}-0000${extension}`,
    etag: ids.join(),
    bytes: ids.length,
    sha256: ids.join(),
    ids,
  };
}

function bucketOf(...objects: BucketObjectView[]): Map<string, BucketObjectView> {
  return new Map(objects.map((object) => [object.key, object]));
}

describe('the oracle', () => {
  const now = T0 + 3 * HOUR;

  it('accepts a row recorded after the start, in its grid window, once', () => {
    const { model, exp } = modelWithExport();
    const ok = file(T0 + HOUR - 1, T0 + 2 * HOUR - 1, ['b']);
    expect(checkStep(model, exp, bucketOf(ok), new BucketHistory(), now)).toEqual([]);
  });

  it('names a row recorded before the start, an off-grid window, a row outside its window, and a second copy', () => {
    const { model, exp } = modelWithExport();
    const early = file(T0 + HOUR - 1, T0 + 2 * HOUR - 1, ['a', 'b']);
    const offGrid = { ...file(T0 + HOUR + 5 * 60_000 - 1, T0 + 2 * HOUR - 1, ['b']) };
    const checks = checkStep(model, exp, bucketOf(early, offGrid), new BucketHistory(), now).map(
      (v) => v.check,
    );
    expect(new Set(checks)).toEqual(new Set(['before-start', 'grid', 'exactly-once']));
    const outside = file(T0 - 1, T0 + HOUR - 1, ['b']);
    expect(checkStep(model, exp, bucketOf(outside), new BucketHistory(), now).map((v) => v.check)).toEqual([
      'recorded-time',
    ]);
  });

  it('accepts the cells of a grid between a finer and a coarser frequency the export had, and no other', () => {
    const { model, exp } = modelWithExport();
    const quarter = file(T0 + HOUR + 30 * 60_000 - 1, T0 + HOUR + 45 * 60_000 - 1, ['b']);
    expect(checkStep(model, exp, bucketOf(quarter), new BucketHistory(), now).map((v) => v.check)).toEqual([
      'grid',
    ]);
    exp.frequencies = new Set(['every_5_minutes', 'daily']);
    expect(checkStep(model, exp, bucketOf(quarter), new BucketHistory(), now)).toEqual([]);
  });

  it('names a file that lost rows or disappeared, and a window in a format the export never had', () => {
    const { model, exp } = modelWithExport();
    model.rows.set('c', {
      workspace: 0,
      dataset: 'email_events',
      recordedMs: T0 + 110 * 60_000,
      refused: false,
    });
    const history = new BucketHistory();
    const full = file(T0 + HOUR - 1, T0 + 2 * HOUR - 1, ['b', 'c']);
    expect(checkStep(model, exp, bucketOf(full), history, now)).toEqual([]);
    const fewer = file(T0 + HOUR - 1, T0 + 2 * HOUR - 1, ['b']);
    expect(checkStep(model, exp, bucketOf(fewer), history, now).map((v) => v.check)).toEqual(['shrink']);
    expect(checkStep(model, exp, bucketOf(), history, now).map((v) => v.check)).toEqual(['shrink']);
    const parquet = file(T0 + 2 * HOUR - 1, T0 + 3 * HOUR - 1, [], '.parquet');
    expect(checkStep(model, exp, bucketOf(parquet), new BucketHistory(), now).map((v) => v.check)).toEqual([
      'format',
    ]);
  });

  it("keeps each export's first formats apart: another export's window of the same name is not this one's", () => {
    const { model, exp } = modelWithExport();
    const other: ModelExport = {
      ...exp,
      ref: 1,
      prefix: 'q',
      prefixes: ['q'],
      formats: [{ sinceMs: T0, format: 'parquet' }],
    };
    model.exports.push(other);
    const history = new BucketHistory();
    const window = file(T0 + HOUR - 1, T0 + 2 * HOUR - 1, ['b']);
    const asParquet = { ...window, key: window.key.replace(/^p\//, 'q/').replace('.jsonl.gz', '.parquet') };
    expect(checkStep(model, exp, bucketOf(window), history, now)).toEqual([]);
    expect(checkStep(model, other, bucketOf(asParquet), history, now)).toEqual([]);
    expect(checkStep(model, exp, bucketOf(window), history, now)).toEqual([]);
  });

  it('names a manifest that does not list the files present with their SHA-256', () => {
    const { exp } = modelWithExport();
    const data = file(T0 + HOUR - 1, T0 + 2 * HOUR - 1, ['b']);
    const manifest = (sha256: string): BucketObjectView => ({
      key: `p/_sluice/manifests/email_events/date=2026-03-02/${T0 + HOUR - 1}-${T0 + 2 * HOUR - 1}.json`,
      etag: sha256,
      bytes: 1,
      sha256: 'm',
      json: { format: 'jsonl', rows: 1, files: [{ key: data.key, rows: 1, bytes: data.bytes, sha256 }] },
    });
    expect(checkManifests(exp, bucketOf(data, manifest(data.sha256)))).toEqual([]);
    expect(checkManifests(exp, bucketOf(data, manifest('other'))).map((v) => v.check)).toEqual(['manifest']);
    expect(checkManifests(exp, bucketOf(data)).map((v) => v.check)).toEqual(['manifest']);
  });

  it('lets a window written again lose erased rows only, and names an erased row in a file written after', () => {
    const { model, exp } = modelWithExport();
    model.rows.set('c', {
      workspace: 0,
      dataset: 'email_events',
      recordedMs: T0 + 110 * 60_000,
      refused: false,
    });
    const history = new BucketHistory();
    const window = [T0 + HOUR - 1, T0 + 2 * HOUR - 1] as const;
    expect(checkStep(model, exp, bucketOf(file(...window, ['b', 'c'])), history, now)).toEqual([]);
    model.rows.get('c')!.erasedMs = now;
    // Unchanged since the erasure: the customer's file, left alone.
    expect(checkStep(model, exp, bucketOf(file(...window, ['b', 'c'])), history, now)).toEqual([]);
    expect(checkStep(model, exp, bucketOf(file(...window, ['b'])), history, now)).toEqual([]);
    expect(checkStep(model, exp, bucketOf(file(...window, [])), history, now).map((v) => v.check)).toEqual([
      'shrink',
    ]);
    const rewritten = { ...file(...window, ['b', 'c']), etag: 'again' };
    expect(checkStep(model, exp, bucketOf(rewritten), history, now).map((v) => v.check)).toEqual(['erased']);
  });

  it('names a file written again with the same rows and other bytes', () => {
    const { model, exp } = modelWithExport();
    const history = new BucketHistory();
    const first = file(T0 + HOUR - 1, T0 + 2 * HOUR - 1, ['b']);
    expect(checkStep(model, exp, bucketOf(first), history, now)).toEqual([]);
    const same = { ...first, etag: 'again' };
    expect(checkStep(model, exp, bucketOf(same), history, now)).toEqual([]);
    const other = { ...first, etag: 'third', sha256: 'other' };
    expect(checkStep(model, exp, bucketOf(other), history, now).map((v) => v.check)).toEqual(['same-bytes']);
  });

  it('counts an archived row as available only while the archive reaches the hot horizon', () => {
    const { model } = modelWithExport();
    const retention = 3 * 24 * HOUR;
    const late = T0 + 10 * 24 * HOUR;
    model.archived.add('a');
    expect(model.isAvailable('a', T0 + 80 * 60_000, late, retention)).toBe(false);
    model.archiveThroughMs = late - 2 * HOUR;
    expect(model.isAvailable('a', T0 + 80 * 60_000, late, retention)).toBe(true);
    expect(model.isAvailable('b', T0 + 100 * 60_000, late, retention)).toBe(false);
    expect(model.isAvailable('b', T0 + 100 * 60_000, now, retention)).toBe(true);
  });

  it('names an exportedThrough past undelivered rows, and a totalRowsExported below the rows delivered', () => {
    const { model, exp } = modelWithExport();
    const delivered = bucketOf(file(T0 + HOUR - 1, T0 + 2 * HOUR - 1, ['b']));
    const through = { email_events: new Date(T0 + 2 * HOUR - 1).toISOString() };
    expect(
      checkTotals(
        model,
        exp,
        delivered,
        { exportedThrough: through, totalRowsExported: 1 },
        now,
        3 * 24 * HOUR,
      ),
    ).toEqual([]);
    expect(
      checkTotals(
        model,
        exp,
        bucketOf(),
        { exportedThrough: through, totalRowsExported: 1 },
        now,
        3 * 24 * HOUR,
      ).map((v) => v.check),
    ).toEqual(['totals']);
    expect(
      checkTotals(
        model,
        exp,
        delivered,
        { exportedThrough: through, totalRowsExported: 0 },
        now,
        3 * 24 * HOUR,
      ).map((v) => v.check),
    ).toEqual(['totals']);
  });

  it("keeps one row per message and window, the message's last one, and owes no row a later one replaced", () => {
    const { model, exp } = modelWithExport();
    exp.memberships.set('message_events', [{ addedMs: exp.startMs }]);
    const message = (updatedMin: number, recordedMin: number, status: string) =>
      model.addRow(`m1@${T0 + updatedMin * 60_000}`, {
        workspace: 0,
        dataset: 'message_events',
        recordedMs: T0 + recordedMin * 60_000,
        refused: false,
        key: 'm1',
        updatedMs: T0 + updatedMin * 60_000,
        status,
      });
    message(95, 95, 'sent');
    message(110, 110, 'delivered');
    const window = (ids: string[]) => ({
      ...file(T0 + HOUR - 1, T0 + 2 * HOUR - 1, ids),
      key: `p/message_events/date=2026-03-02/message_events-${T0 + HOUR - 1}-${T0 + 2 * HOUR - 1}-0000.jsonl.gz`,
    });
    const last = `m1@${T0 + 110 * 60_000}`;
    const first = `m1@${T0 + 95 * 60_000}`;
    expect(checkStep(model, exp, bucketOf(window([last])), new BucketHistory(), now)).toEqual([]);
    expect(
      checkStep(model, exp, bucketOf(window([first])), new BucketHistory(), now).map((v) => v.check),
    ).toEqual(['current-row']);
    expect(
      new Set(
        checkStep(model, exp, bucketOf(window([first, last])), new BucketHistory(), now).map((v) => v.check),
      ),
    ).toEqual(new Set(['current-row']));
    const owed = (ids: string[]) =>
      missingRows(model, exp, bucketOf(window(ids)), now + HOUR, 3 * 24 * HOUR, () => false)
        .filter((v) => v.message.includes('message_events'))
        .map((v) => v.check);
    expect(owed([last])).toEqual([]);
    expect(owed([])).toEqual(['caught-up']);
  });

  it('accepts the first date window after a change from run_hour: from the end of a run_hour window to the grid', () => {
    const { model, exp } = modelWithExport();
    exp.configs = [
      { sinceMs: T0, layout: 'run_hour', frequency: 'hourly', schedule: { minute: 10 } },
      { sinceMs: T0 + 70 * 60_000, layout: 'date', frequency: 'hourly', schedule: null },
    ];
    const checks = (object: BucketObjectView) =>
      checkStep(model, exp, bucketOf(object), new BucketHistory(), now).map((v) => v.check);
    // The 01:10 run's window ended at 01:05; the date grid's next point is 02:00. Row b (01:40) is in it.
    expect(checks(file(T0 + HOUR + 5 * 60_000 - 1, T0 + 2 * HOUR - 1, ['b']))).toEqual([]);
    // 01:20 is the end of no run_hour window of the export ({minute: 10}).
    expect(checks(file(T0 + HOUR + 20 * 60_000 - 1, T0 + 2 * HOUR - 1, ['b']))).toEqual(['grid']);
  });

  it("names a run_hour file whose organisation, job or slot is not the contract's", () => {
    const { model, exp } = modelWithExport();
    exp.configs = [{ sinceMs: T0, layout: 'run_hour', frequency: 'hourly', schedule: { minute: 5 } }];
    exp.startMs = T0;
    const runHour = (stamp: string, hour: string, organization = 'ws_0', job?: string) => {
      const ownJob = createHash('sha256').update(`dest:${stamp}`).digest('hex').slice(0, 12);
      return {
        ...file(0, 0, ['b']),
        key: `p/v1/schema_type=email_events/year=2026/month=03/day=02/hour=${hour}/${organization}_email_events_${stamp}_${job ?? ownJob}.part-000.jsonl.gz`,
      };
    };
    const checks = (object: BucketObjectView) =>
      checkStep(model, exp, bucketOf(object), new BucketHistory(), now).map((v) => v.check);
    // Row b (01:40) in the window (01:00, 02:00] of the 02:05 run.
    expect(checks(runHour('20260302T020500Z', '02'))).toEqual([]);
    expect(checks(runHour('20260302T020500Z', '02', 'ws_1'))).toEqual(['name']);
    expect(checks(runHour('20260302T020500Z', '02', 'ws_0', '000000000000'))).toEqual(['name']);
    expect(checks(runHour('20260302T020500Z', '03'))).toEqual(['name']);
    // The 02:10 slot is on no schedule of the export ({minute: 5}).
    expect(checks(runHour('20260302T021000Z', '02'))).toEqual(['grid']);
  });
});

describe('the oracle on parent organisations', () => {
  const now = T0 + 5 * HOUR;
  /** ws_1 linked under ws_0 at T0 + 1 h, listed at T0 + 100 min, removed at T0 + 3 h; rows c, d, e of ws_1. */
  function withChild() {
    const { model, exp } = modelWithExport();
    model.links.push({ parent: 0, child: 1, linkedMs: T0 + HOUR });
    exp.children = [{ child: 1, childId: 'ws_1', addedMs: T0 + 100 * 60_000, removedMs: T0 + 3 * HOUR }];
    for (const [id, minutes] of [
      ['c', 95],
      ['d', 110],
      ['e', 200],
    ] as const)
      model.rows.set(id, {
        workspace: 1,
        dataset: 'email_events',
        recordedMs: T0 + minutes * 60_000,
        refused: false,
      });
    return { model, exp };
  }
  const partitioned = (
    organization: string,
    fromMs: number,
    toMs: number,
    ids: string[],
  ): BucketObjectView => {
    const plain = file(fromMs, toMs, ids);
    return {
      ...plain,
      key: plain.key.replace('date=2026-03-02/', `date=2026-03-02/organization_id=${organization}/`),
    };
  };

  it("accepts each organisation's rows in its own partition, a child's while linked and listed", () => {
    const { model, exp } = withChild();
    const bucket = bucketOf(
      partitioned('ws_0', T0 + HOUR - 1, T0 + 2 * HOUR - 1, ['b']),
      partitioned('ws_1', T0 + HOUR - 1, T0 + 2 * HOUR - 1, ['d']),
    );
    expect(checkStep(model, exp, bucket, new BucketHistory(), now)).toEqual([]);
    expect(missingRows(model, exp, bucket, now, 30 * 24 * HOUR, () => false)).toEqual([]);
  });

  it("names a child's row outside its time, in another's partition or unpartitioned, and one owed but missing", () => {
    const { model, exp } = withChild();
    const early = partitioned('ws_1', T0 + HOUR - 1, T0 + 2 * HOUR - 1, ['c', 'd']);
    const afterRemoval = partitioned('ws_1', T0 + 3 * HOUR - 1, T0 + 4 * HOUR - 1, ['e']);
    const checks = (objects: BucketObjectView[]) =>
      checkStep(model, exp, bucketOf(...objects), new BucketHistory(), now).map((v) => v.check);
    expect(checks([early])).toEqual(['organization']);
    expect(checks([afterRemoval])).toEqual(['organization']);
    expect(checks([partitioned('ws_0', T0 + HOUR - 1, T0 + 2 * HOUR - 1, ['d'])])).toEqual(['organization']);
    expect(checks([file(T0 + HOUR - 1, T0 + 2 * HOUR - 1, ['d'])])).toEqual(['organization']);
    const withoutChild = bucketOf(partitioned('ws_0', T0 + HOUR - 1, T0 + 2 * HOUR - 1, ['b']));
    expect(
      missingRows(model, exp, withoutChild, now, 30 * 24 * HOUR, () => false).map((v) => v.check),
    ).toEqual(['caught-up']);
  });
});
