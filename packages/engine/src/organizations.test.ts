import { randomUUID } from 'node:crypto';
import { ArchiveCursorStore, ControlStore, CursorStore, OrganizationStore } from '@sluice/control';
import {
  type Backfill,
  backfillRange,
  DAY_MS,
  type Destination,
  HOUR_MS,
  type ChildLink,
  childOrganizationsAddedAt,
  childOrganizationsRemoved,
  startOfUtcDay,
} from '@sluice/core';
import { EventLogReader, EventLogWriter, generateDatasetRows } from '@sluice/eventlog';
import { beforeAll, describe, expect, it } from 'vitest';
import { controlTable, eventTables, localBucketOrigins } from '../../../test/helpers/tables.js';
import { commitRun } from './commit.js';
import { engineHarness } from './engine-harness.test-support.js';
import {
  type BucketWriterFactory,
  CHILDREN_WRITTEN_AT_ONCE,
  createBucketWriterFactory,
  type EngineDeps,
} from './deps.js';
import { needsRun } from './dispatch.js';
import {
  deleteKeys,
  expectManifestMatchesBucket,
  listKeys,
  listManifestKeys,
  readBytes,
  readLines,
} from './local-bucket.test-support.js';
import type { ItemResult, RunRef, RunTrigger, WorkItem } from './payloads.js';
import { claimAndPlan } from './plan.js';
import { writeWindow } from './write.js';

/**
 * Exports of a parent organisation that include its children's rows (issue 27, items 3 to 5) against the local
 * services: the stores on DynamoDB Local, the production writer on s3rver, on a given clock. Each organisation's
 * rows are ingested into its own workspace's event log; the expected rows are computed here from what was
 * ingested and the link history, not with the code under test.
 */

const MINUTE_MS = 60_000;
const RETENTION_MS = 35 * DAY_MS;
/** A UTC midnight two days ago: the rows lie in its first ten hours. */
const DAY0 = startOfUtcDay(Date.now()) - 2 * DAY_MS;
const NOW = DAY0 + 10 * HOUR_MS + 10 * MINUTE_MS;
const tag = randomUUID().slice(0, 8);
const PARENT = `ws_parent_${tag}`;
const [A, B, C, D] = ['a', 'b', 'c', 'd'].map((name) => `ws_child_${name}_${tag}`) as [
  string,
  string,
  string,
  string,
];
/** Click ids ingested per workspace, with their recorded times. */
const ingested = new Map<string, { id: string; recordedMs: number }[]>();
/** The organisation store, on the control table: the parent's links (its children). */
const organizations = new OrganizationStore(controlTable);
/** The parent's links as made (the expected values are computed from these). */
const links: ChildLink[] = [];

async function linkChild(childId: string, linkedMs: number, unlinkedMs: number | null = null): Promise<void> {
  const link = await organizations.link(PARENT, childId, new Date(linkedMs));
  if (unlinkedMs !== null) links.push(await organizations.unlink(PARENT, childId, new Date(unlinkedMs)));
  else links.push(link);
}

const harness = engineHarness({ workspaceId: PARENT, folder: 'orgs-test', eventRetentionMs: RETENTION_MS });
const { deps, controlStore, backfills } = harness;

/** An export of the parent's click events with the children given, stored; `prefix`: its path prefix. */
async function createDestination(options: {
  childOrganizations: string[];
  addedAt?: Record<string, string>;
  createdMs?: number;
}): Promise<Destination & { prefix: string }> {
  const createdMs = options.createdMs ?? DAY0 - HOUR_MS;
  const startFrom = new Date(createdMs).toISOString();
  const destination = await harness.createDestination({
    name: 'organisations test',
    datasets: ['click_events'],
    startFrom,
    createdMs,
    stored: {
      childOrganizations: options.childOrganizations,
      childOrganizationsAddedAt:
        options.addedAt ?? Object.fromEntries(options.childOrganizations.map((entry) => [entry, startFrom])),
    },
  });
  return { ...destination, prefix: destination.pathPrefix };
}

async function runUntilDone(
  destination: Pick<Destination, 'id'>,
  nowMs: number,
  trigger: RunTrigger = 'schedule',
  overrides: Partial<EngineDeps> = {},
): Promise<void> {
  await harness.runUntilDone(destination, { nowMs, trigger, overrides, maxRuns: 20 });
}

/** The click ids of the files under `prefix`, per `organization_id=` folder, and each row's own `organization_id`. */
async function exported(prefix: string) {
  const byFolder = new Map<string, string[]>();
  const owners = new Map<string, Set<string>>();
  for (const key of await listKeys(prefix)) {
    const folder = /\/organization_id=([^/]+)\//.exec(key)?.[1] ?? '(none)';
    for (const line of await readLines(key)) {
      const row = JSON.parse(line) as { click_id: string; organization_id: string };
      byFolder.set(folder, [...(byFolder.get(folder) ?? []), row.click_id]);
      owners.set(folder, (owners.get(folder) ?? new Set()).add(row.organization_id));
    }
  }
  for (const ids of byFolder.values()) ids.sort();
  return { byFolder, owners };
}

/** Each data file under `prefix` (its key after the prefix) and its bytes, base64. */
async function bytesOf(prefix: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const key of await listKeys(prefix)) {
    files.set(key.slice(prefix.length), (await readBytes(key)).toString('base64'));
  }
  return files;
}

/** Queues a backfill of the export's click events over `(fromMs, toMs]`, asked at `nowMs`. */
async function queueBackfill(
  destinationId: string,
  fromMs: number,
  toMs: number,
  nowMs: number,
): Promise<Backfill> {
  const iso = new Date(nowMs).toISOString();
  const backfill: Backfill = {
    id: `bf_${nowMs.toString(16).padStart(12, '0')}${randomUUID().replaceAll('-', '').slice(0, 12)}`,
    workspaceId: PARENT,
    destinationId,
    status: 'queued',
    fullHistory: false,
    datasets: ['click_events'],
    from: new Date(fromMs).toISOString(),
    to: new Date(toMs).toISOString(),
    range: backfillRange(fromMs, toMs, 'hourly', nowMs),
    doneThroughMs: {},
    reached: { click_events: {} },
    progress: { click_events: { rows: 0, files: 0, bytes: 0, windowsDone: 0, windowsTotal: 0 } },
    attempts: 0,
    error: null,
    createdAt: iso,
    startedAt: null,
    finishedAt: null,
    updatedAt: iso,
  };
  expect(await backfills.create(backfill)).toBe('created');
  return backfill;
}

/** The click ids of `workspace` recorded in `(fromMs, toMs]`, sorted. */
function idsOf(workspace: string, fromMs: number, toMs: number): string[] {
  return (ingested.get(workspace) ?? [])
    .filter((row) => fromMs < row.recordedMs && row.recordedMs <= toMs)
    .map((row) => row.id)
    .sort();
}

beforeAll(async () => {
  const writer = new EventLogWriter({ ...eventTables, explicitRecordedAt: 'unchecked' });
  for (const [index, workspace] of [PARENT, A, B, C, D].entries()) {
    const rows = [
      ...generateDatasetRows({
        dataset: 'click_events',
        count: 60,
        workspaceId: workspace,
        seed: 27 + index,
        from: DAY0,
        to: DAY0 + 10 * HOUR_MS - 1,
      }),
    ] as unknown as Record<string, unknown>[];
    const result = await writer.ingestEvents(workspace, rows);
    expect(result.invalid).toEqual([]);
    ingested.set(
      workspace,
      rows.map((row) => ({ id: String(row.click_id), recordedMs: Date.parse(String(row.recorded_at)) })),
    );
  }
  // A from before the export; B linked inside the third hour, at a row's own time; C unlinked inside the sixth;
  // D linked but never chosen.
  const bLinkedMs = (ingested.get(B) ?? [])[20]?.recordedMs as number;
  const workspaces = new ControlStore(controlTable);
  for (const workspace of [PARENT, A, B, C, D]) await workspaces.ensureWorkspace(workspace);
  await linkChild(A, DAY0 - 3 * HOUR_MS);
  await linkChild(B, bLinkedMs);
  await linkChild(C, DAY0 - 3 * HOUR_MS, DAY0 + 5 * HOUR_MS + 31 * MINUTE_MS);
  await linkChild(D, DAY0 - 3 * HOUR_MS);
}, 120_000);

describe("a parent's export that includes child organisations", () => {
  it("holds each included organisation's rows once, in its own partition, over exactly the time it was included", async () => {
    // Prepare
    const destination = await createDestination({ childOrganizations: [A, B, C] });
    const bLinkedMs = Date.parse(links.find((link) => link.childId === B)?.linkedAt as string);

    // Act
    await runUntilDone(destination, NOW);

    // Assess: every row of each included organisation over its time, nothing of D, each under its own folder
    const { byFolder, owners } = await exported(destination.prefix);
    const start = DAY0 - HOUR_MS;
    const end = DAY0 + 10 * HOUR_MS - 1;
    expect(byFolder).toEqual(
      new Map([
        [PARENT, idsOf(PARENT, start, end)],
        [A, idsOf(A, start, end)],
        [B, idsOf(B, bLinkedMs, end)],
        [C, idsOf(C, start, DAY0 + 5 * HOUR_MS + 31 * MINUTE_MS)],
      ]),
    );
    // The row at B's link time itself is not exported (exact start, inside its window)
    expect(byFolder.get(B)).not.toContain((ingested.get(B) ?? [])[20]?.id);
    expect(byFolder.get(B)).toContain((ingested.get(B) ?? [])[21]?.id);
    for (const [folder, ids] of owners) expect([...ids], folder).toEqual([folder]);
    // One manifest per organisation's file set, listing exactly its files
    const keys = await listKeys(destination.prefix);
    const manifests = await listManifestKeys(destination.prefix);
    expect(manifests.length).toBe(keys.length);
    for (const key of keys) {
      const manifest = key
        .replace(`${destination.prefix}/`, `${destination.prefix}/_sluice/manifests/`)
        .replace(/click_events-(\d+-\d+)-0000\.jsonl\.gz$/, '$1.json');
      expect(manifests).toContain(manifest);
      const organization = /organization_id=([^/]+)\//.exec(key)?.[1];
      expect((await expectManifestMatchesBucket(manifest, [key])).organization_id).toBe(organization);
    }
    // Nothing left in progress: the children's progress is forgotten with the windows'
    expect((await new CursorStore(controlTable).getProgress(PARENT, destination.id)).size).toBe(0);
  }, 120_000);

  it("lists no organisation in a work item: the writer reads the span's from the cursor, and stops on a span it does not hold", async () => {
    // Prepare: a run planned for an export with A and B
    const destination = await createDestination({ childOrganizations: [A, B] });
    const planned = await claimAndPlan(
      { workspaceId: PARENT, destinationId: destination.id, trigger: 'schedule', executionId: randomUUID() },
      deps(NOW),
    );
    const run = planned.run as RunRef;
    const items = (planned.items ?? []) as Extract<WorkItem, { kind: 'events' }>[];
    expect(items.length).toBeGreaterThan(0);
    expect(items.every((item) => item.partitioned === true && item.organizations === undefined)).toBe(true);
    // The first span with rows of A
    const first = items.find((item) => idsOf(A, item.fromMs, item.toMs).length > 0) as (typeof items)[number];

    // Act: a span the cursor does not hold (as after another run replanned it), then the run's own first span
    const foreign = await writeWindow({ run, item: { ...first, fromMs: first.fromMs - HOUR_MS } }, deps(NOW));
    const own = await writeWindow({ run, item: first }, deps(NOW));

    // Assess: the first stops without a file; the second writes A's rows of its span (and the others')
    expect(foreign).toMatchObject({ status: 'stopped', stopReason: 'lease_lost', files: 0 });
    expect(own.status).toBe('written');
    const { byFolder } = await exported(destination.prefix);
    expect(byFolder.get(A)).toEqual(idsOf(A, first.fromMs, first.toMs));
    for (const [folder, ids] of byFolder) {
      expect([PARENT, A, B]).toContain(folder);
      expect(idsOf(folder, first.fromMs, first.toMs)).toEqual(expect.arrayContaining(ids));
    }
  }, 120_000);

  it('keeps the organisations a window was planned with: a retry after a child left the list still reads it', async () => {
    // Prepare: the first run plans the windows with A and B, and the bucket refuses every upload
    const destination = await createDestination({ childOrganizations: [A, B] });
    const refusing: BucketWriterFactory = (location, credentials) => ({
      ...createBucketWriterFactory({ allowedEndpoints: localBucketOrigins })(location, credentials),
      writeFile: () => {
        throw Object.assign(new Error('bucket went away'), { name: 'BucketUnreachable' });
      },
    });
    const planned = await claimAndPlan(
      { workspaceId: PARENT, destinationId: destination.id, trigger: 'schedule', executionId: randomUUID() },
      deps(NOW),
    );
    const run = planned.run as RunRef;
    const results: ItemResult[] = [];
    for (const item of planned.items ?? []) {
      try {
        // A span without rows writes nothing, so it succeeds
        results.push(await writeWindow({ run, item }, deps(NOW, { bucketWriterFactory: refusing })));
      } catch {
        results.push({
          status: 'failed',
          item,
          error: { Error: 'BucketUnreachable', Cause: 'bucket went away' },
        });
      }
    }
    expect((await commitRun({ run, results }, deps(NOW))).status).toBe('failed');
    const cursor = (await new CursorStore(controlTable).get(PARENT, destination.id)).get('click_events');
    expect(cursor?.plannedSpans.some((span) => span.organizations?.some((o) => o.id === B))).toBe(true);
    await controlStore.updateDestination(PARENT, destination.id, {
      childOrganizations: [A],
      childOrganizationsAddedAt: { [A]: destination.startFrom },
    });

    // Act: the next run retries the planned windows
    await runUntilDone(destination, NOW + MINUTE_MS);

    // Assess: B's rows of those windows are there, once
    const bLinkedMs = Date.parse(links.find((link) => link.childId === B)?.linkedAt as string);
    const { byFolder } = await exported(destination.prefix);
    expect(byFolder.get(B)).toEqual(idsOf(B, bLinkedMs, DAY0 + 10 * HOUR_MS - 1));
    expect(byFolder.get(A)).toEqual(idsOf(A, DAY0 - HOUR_MS, DAY0 + 10 * HOUR_MS - 1));
  }, 120_000);

  it("writes the children's file sets a few at once, the export's own last, and a writer out of time resumes each to the bytes of a clean run", async () => {
    // Prepare: a clean export, and a twin whose uploads are watched: each child's first upload waits until
    // every child has begun one (or 5 s passed, so children written one after the other still finish)
    const clean = await createDestination({ childOrganizations: [A, B, C] });
    const twin = await createDestination({ childOrganizations: [A, B, C] });
    await runUntilDone(clean, NOW);
    const real = createBucketWriterFactory({ allowedEndpoints: localBucketOrigins });
    const uploads: { writer: number; organization: string; phase: 'start' | 'end' }[] = [];
    let opened = 0;
    let inFlight = 0;
    let mostInFlight = 0;
    const waiting = new Map<string, () => void>();
    const releaseAll = () => {
      for (const release of waiting.values()) release();
    };
    const watched: BucketWriterFactory = (location, credentials) => {
      const writer = real(location, credentials);
      const id = ++opened;
      return {
        ...writer,
        writeFile: async (key, lines, options) => {
          const organization = /organization_id=([^/]+)\//.exec(key)?.[1] as string;
          uploads.push({ writer: id, organization, phase: 'start' });
          inFlight += 1;
          mostInFlight = Math.max(mostInFlight, inFlight);
          if (organization !== PARENT && !waiting.has(organization)) {
            const started = new Promise<void>((resolve) => waiting.set(organization, resolve));
            if (waiting.size === 3) releaseAll();
            const timer = setTimeout(releaseAll, 5_000);
            await started;
            clearTimeout(timer);
          }
          try {
            return await writer.writeFile(key, lines, options);
          } finally {
            inFlight -= 1;
            uploads.push({ writer: id, organization, phase: 'end' });
          }
        },
      };
    };
    const planned = await claimAndPlan(
      { workspaceId: PARENT, destinationId: twin.id, trigger: 'schedule', executionId: randomUUID() },
      deps(NOW),
    );
    const run = planned.run as RunRef;
    // A span with rows of all three children: B linked in the fourth hour, C unlinked in the sixth
    const item = (planned.items ?? []).find(
      (entry) =>
        entry.kind === 'events' && entry.fromMs <= DAY0 + 4 * HOUR_MS && DAY0 + 5 * HOUR_MS <= entry.toMs,
    );

    // Act: the first writer is out of time at once (after its first files), then the runs finish, resuming
    const first = await writeWindow(
      { run, item: item as WorkItem },
      deps(NOW, { bucketWriterFactory: watched }),
      { deadlineMs: NOW },
    );
    const results: ItemResult[] = [first];
    for (const other of (planned.items ?? []).filter((entry) => entry !== item))
      results.push(await writeWindow({ run, item: other }, deps(NOW)));
    await commitRun({ run, results }, deps(NOW));
    await runUntilDone(twin, NOW + MINUTE_MS, 'schedule', { bucketWriterFactory: watched });

    // Assess: the three children's first files were uploaded at once, at most CHILDREN_WRITTEN_AT_ONCE
    expect(first.status).toBe('partial');
    expect(first.files).toBeGreaterThanOrEqual(3);
    expect(mostInFlight).toBe(3);
    expect(mostInFlight).toBeLessThanOrEqual(CHILDREN_WRITTEN_AT_ONCE);
    // Each writer writes the export's own files after every child's (the first one stopped before its own)
    const writers = new Set(uploads.map((upload) => upload.writer));
    expect(writers.size).toBeGreaterThan(1);
    for (const writer of writers) {
      const its = uploads.filter((upload) => upload.writer === writer);
      const firstOwn = its.findIndex((upload) => upload.organization === PARENT);
      if (firstOwn >= 0)
        expect(its.slice(firstOwn).every((upload) => upload.organization === PARENT)).toBe(true);
    }
    expect(uploads.some((upload) => upload.organization === PARENT)).toBe(true);
    // The same names and bytes as the clean run
    const bytesOf = async (prefix: string) => {
      const files = new Map<string, string>();
      for (const key of await listKeys(prefix)) {
        files.set(key.slice(prefix.length), (await readBytes(key)).toString('base64'));
      }
      return files;
    };
    const expected = await bytesOf(clean.prefix);
    expect(expected.size).toBeGreaterThan(20);
    expect(await bytesOf(twin.prefix)).toEqual(expected);
    expect((await new CursorStore(controlTable).getProgress(PARENT, twin.id)).size).toBe(0);
  }, 180_000);

  it('a run whose writers fail part way, retried, and a backfill of the range write the bytes of a clean run', async () => {
    // Prepare: a clean export, and a twin whose bucket refuses every fourth upload of its first run
    const clean = await createDestination({ childOrganizations: ['*'] });
    const twin = await createDestination({ childOrganizations: ['*'] });
    await runUntilDone(clean, NOW);
    let uploads = 0;
    const real = createBucketWriterFactory({ allowedEndpoints: localBucketOrigins });
    const flaky: BucketWriterFactory = (location, credentials) => {
      const writer = real(location, credentials);
      return {
        ...writer,
        writeFile: (key, lines, options) => {
          if (++uploads % 4 === 0)
            throw Object.assign(new Error('bucket went away'), { name: 'BucketUnreachable' });
          return writer.writeFile(key, lines, options);
        },
      };
    };
    const planned = await claimAndPlan(
      { workspaceId: PARENT, destinationId: twin.id, trigger: 'schedule', executionId: randomUUID() },
      deps(NOW),
    );
    const run = planned.run as RunRef;
    const results: ItemResult[] = [];
    for (const item of planned.items ?? []) {
      try {
        results.push(await writeWindow({ run, item }, deps(NOW, { bucketWriterFactory: flaky })));
      } catch {
        results.push({
          status: 'failed',
          item,
          error: { Error: 'BucketUnreachable', Cause: 'bucket went away' },
        });
      }
    }
    await commitRun({ run, results }, deps(NOW));
    expect(uploads).toBeGreaterThan(4);

    // Act: the next run finishes; then a backfill of the whole range rewrites it
    await runUntilDone(twin, NOW + MINUTE_MS);
    const retried = await bytesOf(twin.prefix);
    const backfill = await queueBackfill(twin.id, DAY0 - HOUR_MS, DAY0 + 10 * HOUR_MS, NOW);
    await runUntilDone(twin, NOW + 2 * MINUTE_MS, 'backfill');

    // Assess: the same names and bytes as the clean run, every time
    const expected = await bytesOf(clean.prefix);
    expect(expected.size).toBeGreaterThan(20);
    expect(retried).toEqual(expected);
    expect((await backfills.get(PARENT, twin.id, backfill.id))?.status).toBe('succeeded');
    expect(await bytesOf(twin.prefix)).toEqual(expected);
  }, 180_000);

  it('includes a child removed from the list for the time before the removal: in a catching-up run and a backfill', async () => {
    // Prepare: two exports with A and B that have not run yet; at R, B leaves the first's list and the second's
    // list is emptied (the same changes as PATCH makes: `childOrganizationsAddedAt`, `childOrganizationsRemoved`)
    const removedMs = DAY0 + 4 * HOUR_MS + 17 * MINUTE_MS;
    const narrowed = await createDestination({ childOrganizations: [A, B] });
    const emptied = await createDestination({ childOrganizations: [A, B] });
    for (const [destination, next] of [
      [narrowed, [A]],
      [emptied, []],
    ] as const) {
      await controlStore.updateDestination(PARENT, destination.id, {
        childOrganizations: [...next],
        childOrganizationsAddedAt: childOrganizationsAddedAt(
          destination.childOrganizationsAddedAt,
          next,
          new Date(removedMs).toISOString(),
        ),
        childOrganizationsRemoved: childOrganizationsRemoved(
          undefined,
          destination.childOrganizationsAddedAt,
          next,
          new Date(removedMs).toISOString(),
        ),
      });
    }
    const bLinkedMs = Date.parse(links.find((link) => link.childId === B)?.linkedAt as string);
    const start = DAY0 - HOUR_MS;
    const end = DAY0 + 10 * HOUR_MS - 1;

    // Act: both catch up after the removal; the first's windows are then backfilled
    await runUntilDone(narrowed, NOW);
    await runUntilDone(emptied, NOW);

    // Assess: B (and, emptied, A) exactly up to the removal, inclusive; after it the emptied export is unpartitioned
    const first = await exported(narrowed.prefix);
    expect(first.byFolder).toEqual(
      new Map([
        [PARENT, idsOf(PARENT, start, end)],
        [A, idsOf(A, start, end)],
        [B, idsOf(B, bLinkedMs, removedMs)],
      ]),
    );
    // The emptied export: A and B up to the removal; the parent's rows once each, in its partition in the spans
    // that still included a child (through the one holding the removal), unpartitioned after
    const second = await exported(emptied.prefix);
    expect([...second.byFolder.keys()].sort()).toEqual(['(none)', PARENT, A, B].sort());
    expect(second.byFolder.get(A)).toEqual(idsOf(A, start, removedMs));
    expect(second.byFolder.get(B)).toEqual(idsOf(B, bLinkedMs, removedMs));
    const partitioned = second.byFolder.get(PARENT) ?? [];
    const unpartitioned = second.byFolder.get('(none)') ?? [];
    expect([...partitioned, ...unpartitioned].sort()).toEqual(idsOf(PARENT, start, end));
    expect(partitioned).toEqual(expect.arrayContaining(idsOf(PARENT, start, removedMs)));
    expect(idsOf(PARENT, removedMs, end)).toEqual(expect.arrayContaining(unpartitioned));
    expect(unpartitioned.length).toBeGreaterThan(0);
    // A backfill of each, its files deleted first, writes them again, byte for byte
    for (const destination of [narrowed, emptied]) {
      const before = await bytesOf(destination.prefix);
      await deleteKeys([...before.keys()].map((key) => `${destination.prefix}${key}`));
      const backfill = await queueBackfill(destination.id, start, DAY0 + 10 * HOUR_MS, NOW);
      await runUntilDone(destination, NOW + MINUTE_MS, 'backfill');
      expect((await backfills.get(PARENT, destination.id, backfill.id))?.status).toBe('succeeded');
      expect(await bytesOf(destination.prefix)).toEqual(before);
    }
  }, 180_000);

  it("reports a backfill's windows before a child's archive starts, as for the export's own rows", async () => {
    // Prepare: a child E with rows over the ten hours; the hot log keeps three hours; the parent's archive
    // reaches back two days, E's only to the fifth hour (both reach the hot log)
    const E = `ws_child_e_${tag}`;
    await new ControlStore(controlTable).ensureWorkspace(E);
    const rows = [
      ...generateDatasetRows({
        dataset: 'click_events',
        count: 40,
        workspaceId: E,
        seed: 2704,
        from: DAY0,
        to: DAY0 + 10 * HOUR_MS - 1,
      }),
    ] as unknown as Record<string, unknown>[];
    const writer = new EventLogWriter({ ...eventTables, explicitRecordedAt: 'unchecked' });
    expect((await writer.ingestEvents(E, rows)).invalid).toEqual([]);
    ingested.set(
      E,
      rows.map((row) => ({ id: String(row.click_id), recordedMs: Date.parse(String(row.recorded_at)) })),
    );
    await organizations.link(PARENT, E, new Date(DAY0 - 3 * HOUR_MS));
    const archives = new ArchiveCursorStore(controlTable);
    const through = DAY0 + 9 * HOUR_MS;
    await archives.advance(PARENT, 'click_events', undefined, {
      startMs: DAY0 - 2 * DAY_MS,
      throughMs: through,
    });
    await archives.advance(E, 'click_events', undefined, { startMs: DAY0 + 5 * HOUR_MS, throughMs: through });
    const destination = await createDestination({ childOrganizations: [E] });
    await runUntilDone(destination, NOW);
    const delivered = await bytesOf(destination.prefix);
    await deleteKeys([...delivered.keys()].map((key) => `${destination.prefix}${key}`));
    const backfill = await queueBackfill(destination.id, DAY0 - HOUR_MS, DAY0 + 10 * HOUR_MS, NOW);

    // Act: the backfill, with the archive and the short hot log
    await runUntilDone(destination, NOW + MINUTE_MS, 'backfill', {
      archiveCoverage: archives,
      settings: { runBudgetMs: 180_000, eventRetentionMs: 3 * HOUR_MS },
    });

    // Assess: the windows before E's archive are reported, not delivered without E's rows; the rest are whole
    const record = await backfills.get(PARENT, destination.id, backfill.id);
    expect(record?.error ?? '').toMatch(/^Not backfilled: rows recorded click_events from /);
    const { byFolder } = await exported(destination.prefix);
    const firstKept = DAY0 + 5 * HOUR_MS - 1;
    expect(byFolder.get(E)).toEqual(idsOf(E, firstKept, DAY0 + 10 * HOUR_MS - 1));
    expect(byFolder.get(PARENT)).toEqual(idsOf(PARENT, firstKept, DAY0 + 10 * HOUR_MS - 1));
  }, 180_000);

  it("Dispatch starts a run for a child's new rows when the parent has none", async () => {
    // Prepare: an export whose cursor has passed the parent's rows; only a child's rows are after it
    const destination = await createDestination({ childOrganizations: [A] });
    const cursors = new Map([
      [
        'click_events' as const,
        { dataset: 'click_events' as const, plannedSpans: [], exportedThroughMs: DAY0 + 10 * HOUR_MS - 1 },
      ],
    ]);
    const writer = new EventLogWriter({ ...eventTables, explicitRecordedAt: 'unchecked' });
    const late = [
      ...generateDatasetRows({
        dataset: 'click_events',
        count: 1,
        workspaceId: A,
        seed: 99,
        from: DAY0 + 10 * HOUR_MS + MINUTE_MS,
        to: DAY0 + 10 * HOUR_MS + 2 * MINUTE_MS,
      }),
    ] as unknown as Record<string, unknown>[];
    const nowMs = DAY0 + 11 * HOUR_MS + 5 * MINUTE_MS;
    const reader = new EventLogReader({ ...eventTables, now: () => nowMs });

    // Act / Assess: nothing new before the child's row is written; new once it is
    const before = await needsRun(destination, cursors, nowMs, { eventSource: reader, organizations });
    expect((await writer.ingestEvents(A, late)).invalid).toEqual([]);
    const after = await needsRun(destination, cursors, nowMs, { eventSource: reader, organizations });
    expect([before, after]).toEqual([false, true]);
  }, 60_000);
});
