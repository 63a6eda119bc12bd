import { randomUUID } from 'node:crypto';
import { ArchiveCursorStore, ControlExportPositions } from '@sluice/control';
import { type EventPage, EventLogReader, EventLogWriter, generateEvents } from '@sluice/eventlog';
import { describe, expect, it } from 'vitest';
import { controlTable, eventTables } from '../../../test/helpers/tables.js';
import { ArchiveBucket, createArchiveClient } from './bucket.js';
import { ArchiveCompactor } from './compaction.js';
import { ArchivedEventSource } from './source.js';

/**
 * Rows imported (the CLI's explicit `recorded_at`) into an hour the archive has already compacted reach the
 * archive, so they are read after they leave the hot log; the object is merged, never shrunk. Against
 * DynamoDB Local and s3rver, the clocks given.
 */

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const RETENTION_MS = 90 * MINUTE;
const H = Math.floor(Date.now() / HOUR) * HOUR - 6 * HOUR;
const archive = new ArchiveBucket({
  bucket: process.env.SLUICE_ARCHIVE_BUCKET as string,
  client: createArchiveClient({ localEndpoint: process.env.SLUICE_LOCAL_S3_ENDPOINT as string }),
});
const cursors = new ArchiveCursorStore(controlTable);
const hotAt = (nowMs: number) => new EventLogReader({ ...eventTables, now: () => nowMs });
const compactorAt = (nowMs: number) =>
  new ArchiveCompactor({
    hot: hotAt(nowMs),
    archive,
    cursors,
    hotRetentionMs: RETENTION_MS,
    now: () => nowMs,
  });
/** The CLI's writer: explicit recorded times checked against exports, late hours marked. */
const importerAt = (nowMs: number) =>
  new EventLogWriter({
    ...eventTables,
    explicitRecordedAt: { refuseAtOrBehind: new ControlExportPositions(controlTable) },
    lateHours: cursors,
    // Rows that DynamoDB Local's TTL does not delete while the test runs (they are hours old on the real clock).
    retentionSeconds: 7 * 86_400,
    now: () => nowMs,
  });

function events(count: number, seed: number, from: number, to: number) {
  return [...generateEvents({ count, workspaceId: 'x', seed, from, to, mix: { email_events: 1 } })].map(
    (event, index) => ({ ...event, id: `evt_${seed}_${index}` }),
  );
}

async function ids(pages: AsyncIterable<EventPage>): Promise<string[]> {
  const all: string[] = [];
  for await (const page of pages) all.push(...page.lines.map((line) => JSON.parse(line).id as string));
  return all.sort();
}

describe('rows imported into an archived hour', () => {
  it('are archived by the next compaction, merged into the hour’s object, and read once they left the hot log', async () => {
    const workspaceId = `ws_${randomUUID()}`;
    const compacted = H + 80 * MINUTE;
    expect(
      (await importerAt(H + 55 * MINUTE).ingestEvents(workspaceId, events(20, 1, H, H + 50 * MINUTE)))
        .accepted,
    ).toBe(20);
    expect(await compactorAt(compacted).compactDataset(workspaceId, 'email_events')).toMatchObject({
      throughMs: H + HOUR,
    });

    // An import into the archived hour, accepted: no export of the workspace has passed it.
    const late = events(3, 2, H + 10 * MINUTE, H + 40 * MINUTE);
    expect((await importerAt(compacted + MINUTE).ingestEvents(workspaceId, late)).accepted).toBe(3);
    expect(await cursors.lateHours(workspaceId, 'email_events')).toEqual([{ hourMs: H, marks: 1 }]);
    const next = await compactorAt(compacted + 15 * MINUTE).compactDataset(workspaceId, 'email_events');
    expect(next).toMatchObject({ lateHours: 1, rows: 23 });
    expect(await cursors.lateHours(workspaceId, 'email_events')).toEqual([]);

    // Hours later the hour is read from the archive only: all 23 rows.
    const later = H + 5 * HOUR;
    const source = new ArchivedEventSource({
      hot: hotAt(later),
      archive,
      coverage: cursors,
      hotRetentionMs: RETENTION_MS,
      now: () => later,
    });
    const expected = [...events(20, 1, 0, 1), ...late].map((event) => event.id).sort();
    expect(await ids(source.readWindow(workspaceId, 'email_events', H - 1, H + HOUR - 1))).toEqual(expected);

    // A mark whose rows the hot log no longer shows (expired there) never shrinks the object.
    await cursors.markLate(workspaceId, 'email_events', H);
    const expiredView = H + 8 * 86_400_000;
    expect(await compactorAt(expiredView).compactDataset(workspaceId, 'email_events')).toMatchObject({
      lateHours: 1,
      rows: 23,
    });
    expect(await ids(source.readWindow(workspaceId, 'email_events', H - 1, H + HOUR - 1))).toEqual(expected);
  });

  it('are marked only when they fall in an hour that has ended', async () => {
    const workspaceId = `ws_${randomUUID()}`;
    const now = H + 30 * MINUTE;
    const current = events(2, 3, H + MINUTE, H + 20 * MINUTE);
    expect((await importerAt(now).ingestEvents(workspaceId, current)).accepted).toBe(2);
    expect(await cursors.lateHours(workspaceId, 'email_events')).toEqual([]);
  });
});
