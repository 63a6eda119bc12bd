import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ArchiveCursorStore, archiveCursorSk, ErasureLogStore, workspacePk } from '@sluice/control';
import type { EventDataset } from '@sluice/core';
import {
  DynamoRejectedEvents,
  type EventPage,
  EventLogReader,
  EventLogWriter,
  generateEvents,
  generateSubscribers,
} from '@sluice/eventlog';
import { beforeAll, describe, expect, it } from 'vitest';
import { controlTable, eventTables } from '../../../test/helpers/tables.js';
import { ArchiveBucket, createArchiveClient } from './bucket.js';
import { ArchiveCompactor } from './compaction.js';
import { Eraser } from './erasure.js';
import { archiveHourKey, archiveWorkspacePrefix } from './keys.js';
import { type ArchiveCoverageReader, ArchivedEventSource } from './source.js';

/**
 * The event archive against DynamoDB Local and s3rver, with a hot retention of 90 minutes and the clocks of
 * the hot log, the compaction and the reader set by hand: rows written at `H`, compacted while still hot,
 * read back after they expired.
 */

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const RETENTION_MS = 90 * MINUTE;
const H = Math.floor(Date.now() / HOUR) * HOUR - 6 * HOUR;
const dataset: EventDataset = 'email_events';
const archive = new ArchiveBucket({
  bucket: process.env.SLUICE_ARCHIVE_BUCKET as string,
  client: createArchiveClient({ localEndpoint: process.env.SLUICE_LOCAL_S3_ENDPOINT as string }),
});
const cursors = new ArchiveCursorStore(controlTable);
const dynamo = new DynamoDBClient({});

const hotAt = (nowMs: number) => new EventLogReader({ ...eventTables, now: () => nowMs });
const compactorAt = (nowMs: number) =>
  new ArchiveCompactor({
    hot: hotAt(nowMs),
    archive,
    cursors,
    hotRetentionMs: RETENTION_MS,
    now: () => nowMs,
  });
const sourceAt = (nowMs: number, coverage: ArchiveCoverageReader = cursors) =>
  new ArchivedEventSource({
    hot: hotAt(nowMs),
    archive,
    coverage,
    hotRetentionMs: RETENTION_MS,
    now: () => nowMs,
  });

/** Writes `count` email events recorded in `[from, to)`, the first `marked` of them for one subscriber. */
async function ingest(
  workspaceId: string,
  count: number,
  from: number,
  to: number,
  marked = 0,
): Promise<void> {
  const writer = new EventLogWriter({
    ...eventTables,
    explicitRecordedAt: 'unchecked',
    retentionSeconds: RETENTION_MS / 1000,
    now: () => from,
  });
  const events = [...generateEvents({ count, workspaceId, seed: 7, from, to, mix: { [dataset]: 1 } })].map(
    (event, index) =>
      index < marked ? { ...event, subscriber_id: 'sub_erase_me', email: 'Erase.Me@example.com' } : event,
  );
  const { accepted } = await writer.ingestEvents(workspaceId, events as unknown as Record<string, unknown>[]);
  if (accepted !== count) throw new Error(`ingested ${accepted} of ${count}`);
}

async function collect(pages: AsyncIterable<EventPage>): Promise<EventPage> {
  const all: EventPage = { lines: [], keys: [], recordedMs: [] };
  for await (const page of pages) {
    all.lines.push(...page.lines);
    all.keys.push(...page.keys);
    all.recordedMs.push(...page.recordedMs);
  }
  return all;
}

async function objectBytes(key: string): Promise<string[]> {
  const lines: string[] = [];
  for await (const line of archive.readObject(key)) lines.push(line);
  return lines;
}

describe('event archive: compaction, reading behind the hot log, erasure', () => {
  const workspaceId = `ws_${randomUUID()}`;
  /** The rows as the hot log served them while they were all there. */
  let hotRows: EventPage;

  beforeAll(async () => {
    await ingest(workspaceId, 300, H, H + 59 * MINUTE);
    await ingest(workspaceId, 50, H + HOUR, H + HOUR + 30 * MINUTE);
    hotRows = await collect(
      hotAt(H + HOUR + 15 * MINUTE).readWindow(workspaceId, dataset, H - 1, H + 2 * HOUR - 1),
    );
    expect(hotRows.lines).toHaveLength(350);
  });

  it('archives each settled hour once, in the hot log order, and resumes from its cursor', async () => {
    // Prepare: 75 minutes after H, hour H has settled; H + 1h has not.
    const first = await compactorAt(H + 75 * MINUTE).compactDataset(workspaceId, dataset);
    // Assess: the oldest hour the hot log may hold (H - 1h, empty: no object) and H.
    expect(first).toMatchObject({ hours: 2, objects: 1, rows: 300, throughMs: H + HOUR });
    expect(await cursors.get(workspaceId, dataset)).toEqual({ startMs: H - HOUR, throughMs: H + HOUR });
    expect(await objectBytes(archiveHourKey(workspaceId, dataset, H))).toEqual(hotRows.lines.slice(0, 300));
    expect(await archive.exists(archiveHourKey(workspaceId, dataset, H - HOUR))).toBe(false);

    // Act: an hour later the next hour has settled; the compaction continues after its cursor.
    const second = await compactorAt(H + 135 * MINUTE).compactDataset(workspaceId, dataset);
    expect(second).toMatchObject({
      hours: 1,
      objects: 1,
      rows: 50,
      throughMs: H + 2 * HOUR,
      lagSeconds: 15 * 60,
    });
    expect(await objectBytes(archiveHourKey(workspaceId, dataset, H + HOUR))).toEqual(
      hotRows.lines.slice(300),
    );
  });

  it('rewrites the same objects when run again from scratch (idempotent)', async () => {
    const key = archiveHourKey(workspaceId, dataset, H);
    const before = await objectBytes(key);
    const doc = DynamoDBDocumentClient.from(dynamo);
    await doc.send(
      new DeleteCommand({
        TableName: controlTable.tableName,
        Key: { PK: workspacePk(workspaceId), SK: archiveCursorSk(dataset) },
      }),
    );
    const again = await compactorAt(H + 75 * MINUTE).compactDataset(workspaceId, dataset);
    expect(again).toMatchObject({ hours: 2, rows: 300 });
    expect(await objectBytes(key)).toEqual(before);
    // A stale compaction cannot move the cursor another one already moved.
    expect(await cursors.advance(workspaceId, dataset, undefined, { startMs: 0, throughMs: HOUR })).toBe(
      false,
    );
    await compactorAt(H + 135 * MINUTE).compactDataset(workspaceId, dataset);
    expect(await cursors.get(workspaceId, dataset)).toEqual({ startMs: H - HOUR, throughMs: H + 2 * HOUR });
  });

  it('serves expired hours from the archive: the same lines, positions and order as the hot log', async () => {
    const late = H + 5 * HOUR;
    // The hot log alone has lost them (DynamoDB Local never deletes; the reader treats them as absent).
    expect(await collect(hotAt(late).readWindow(workspaceId, dataset, H - 1, H + 2 * HOUR - 1))).toEqual({
      lines: [],
      keys: [],
      recordedMs: [],
    });
    const source = sourceAt(late);
    expect(await collect(source.readWindow(workspaceId, dataset, H - 1, H + 2 * HOUR - 1))).toEqual(hotRows);
    // A window inside an hour, and a resumed read from a position.
    const quarter = await collect(source.readWindow(workspaceId, dataset, H + 15 * MINUTE, H + 30 * MINUTE));
    const expected = hotRows.recordedMs.flatMap((ms, i) =>
      ms > H + 15 * MINUTE && ms <= H + 30 * MINUTE ? [hotRows.lines[i]] : [],
    );
    expect(quarter.lines).toEqual(expected);
    const resumeAt = hotRows.keys[120] as string;
    const resumed = await collect(source.readWindow(workspaceId, dataset, H - 1, H + 2 * HOUR - 1, resumeAt));
    expect(resumed.lines).toEqual(hotRows.lines.slice(121));
    expect(await source.hasRowsAfter(workspaceId, dataset, H - 1, H + 10 * MINUTE)).toBe(true);
    expect(await source.hasRowsAfter(workspaceId, dataset, H + 2 * HOUR - 1, H + 4 * HOUR)).toBe(false);
  });

  it('reads a current window from the hot log without reading the archive cursor', async () => {
    let reads = 0;
    const counting = {
      get: async (ws: string, ds: EventDataset) => {
        reads += 1;
        return cursors.get(ws, ds);
      },
    };
    const source = sourceAt(H + 75 * MINUTE, counting);
    const rows = await collect(source.readWindow(workspaceId, dataset, H + HOUR - 1, H + 2 * HOUR - 1));
    expect(rows.lines).toEqual(hotRows.lines.slice(300));
    expect(reads).toBe(0);
  });
});

describe('erasure', () => {
  const workspaceId = `ws_${randomUUID()}`;
  const eraserAt = (nowMs: number) =>
    new Eraser({
      client: dynamo,
      ...eventTables,
      archive,
      erasureLog: new ErasureLogStore(controlTable),
      rejected: new DynamoRejectedEvents(controlTable),
      hotRetentionMs: RETENTION_MS,
      now: () => nowMs,
    });

  beforeAll(async () => {
    await ingest(workspaceId, 200, H, H + 50 * MINUTE, 12);
    // The subscriber's current state, and two other subscribers.
    const subscribers = [...generateSubscribers({ workspaceId, count: 3 })].map((row, index) =>
      index === 0 ? { ...row, id: 'sub_erase_me', email: 'erase.me@example.com' } : row,
    );
    const written = await new EventLogWriter({
      ...eventTables,
      explicitRecordedAt: 'unchecked',
    }).upsertSubscribers(workspaceId, subscribers);
    expect(written.invalid).toEqual([]);
    await compactorAt(H + 75 * MINUTE).compactDataset(workspaceId, dataset);
  });

  it('removes a subscriber from the hot log and the archive, by id and then by e-mail, and reports it', async () => {
    const key = archiveHourKey(workspaceId, dataset, H);
    const report = await eraserAt(H + 80 * MINUTE).erase(workspaceId, {
      kind: 'subscriber',
      subscriberId: 'sub_erase_me',
    });
    expect(report).toMatchObject({
      hotRows: 12,
      archiveRows: 12,
      archiveObjectsRewritten: 1,
      archiveObjectsDeleted: 0,
    });
    const left = await objectBytes(key);
    expect(left).toHaveLength(188);
    expect(left.some((line) => line.includes('sub_erase_me'))).toBe(false);
    expect(await hotAt(H + 80 * MINUTE).countWindow(workspaceId, dataset, H - 1, H + HOUR)).toBe(188);
    // Nothing left for that subscriber: a second run removes nothing and rewrites nothing.
    const byEmail = await eraserAt(H + 80 * MINUTE).erase(workspaceId, {
      kind: 'email',
      email: 'erase.me@EXAMPLE.com',
    });
    expect(byEmail).toMatchObject({ hotRows: 0, archiveRows: 0, archiveObjectsRewritten: 0 });
  });

  it('removes a whole workspace', async () => {
    const report = await eraserAt(H + 80 * MINUTE).erase(workspaceId, { kind: 'all' });
    expect(report).toMatchObject({ hotRows: 188, subscribers: 2, archiveObjectsDeleted: 1 });
    const keys: string[] = [];
    for await (const key of archive.listKeys(archiveWorkspacePrefix(workspaceId))) keys.push(key);
    expect(keys).toEqual([]);
    expect(await hotAt(H + 80 * MINUTE).countWindow(workspaceId, dataset, H - 1, H + HOUR)).toBe(0);
  });

  it('refuses a target that is not an id or an address', async () => {
    await expect(eraserAt(H).erase(workspaceId, { kind: 'email', email: 'not-an-address' })).rejects.toThrow(
      'Invalid e-mail address',
    );
  });
});
