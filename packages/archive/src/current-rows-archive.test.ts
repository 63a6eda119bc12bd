import { randomUUID } from 'node:crypto';
import { ArchiveCursorStore } from '@sluice/control';
import { latestPerKey, lineKeyOf } from '@sluice/engine';
import { type EventPage, EventLogReader, EventLogWriter } from '@sluice/eventlog';
import { describe, expect, it } from 'vitest';
import { controlTable, eventTables } from '../../../test/helpers/tables.js';
import { ArchiveBucket, createArchiveClient } from './bucket.js';
import { ArchiveCompactor } from './compaction.js';
import { archiveHourKey } from './keys.js';
import { ArchivedEventSource } from './source.js';

/**
 * The rows a current-row dataset emits are event log rows like any other: the compaction archives an hour of
 * `message_events` (and none of the state items kept beside them), and a window read behind the hot log, from
 * the archive, gives the same lines and the same one row per message (against DynamoDB Local and s3rver).
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
const iso = (ms: number) => new Date(ms).toISOString();

async function collect(pages: AsyncIterable<EventPage>): Promise<EventPage> {
  const all: EventPage = { lines: [], keys: [], recordedMs: [] };
  for await (const page of pages) {
    all.lines.push(...page.lines);
    all.keys.push(...page.keys);
    all.recordedMs.push(...page.recordedMs);
  }
  return all;
}

describe('message_events in the event archive', () => {
  it('archives the emitted rows of an hour and serves them behind the hot log, one row per message kept', async () => {
    const workspaceId = `ws_${randomUUID()}`;
    const writer = new EventLogWriter({
      ...eventTables,
      explicitRecordedAt: 'unchecked',
      retentionSeconds: RETENTION_MS / 1000,
      now: () => H + HOUR,
    });
    const row = (id: string, atMs: number) => ({
      dataset: 'message_events',
      message_id: id,
      conversation_id: 'conv_1',
      direction: 'outbound',
      status: 'queued',
      from_phone_number: '471016',
      to_phone_number: '+15555550123',
      media_url_count: 0,
      created_at: iso(atMs),
      updated_at: iso(atMs),
      recorded_at: atMs,
    });
    const change = (id: string, atMs: number, fields: Record<string, unknown>) => ({
      dataset: 'message_events',
      message_id: id,
      updated_at: iso(atMs),
      recorded_at: atMs,
      ...fields,
    });
    const result = await writer.ingestEvents(workspaceId, [
      row('m1', H + MINUTE),
      change('m1', H + 10 * MINUTE, { status: 'sent' }),
      row('m2', H + 20 * MINUTE),
      change('m2', H + 30 * MINUTE, { url_click_count: 1 }),
      change('m1', H + 40 * MINUTE, { status: 'delivered' }),
    ]);
    expect(result.currentRows).toMatchObject({ emitted: 4, kept: 1 });

    const settled = H + 75 * MINUTE;
    const hot = await collect(hotAt(settled).readWindow(workspaceId, 'message_events', H - 1, H + HOUR - 1));
    expect(hot.lines).toHaveLength(4);
    const compactor = new ArchiveCompactor({
      hot: hotAt(settled),
      archive,
      cursors,
      hotRetentionMs: RETENTION_MS,
      now: () => settled,
    });
    await compactor.compactDataset(workspaceId, 'message_events');
    const archived: string[] = [];
    for await (const line of archive.readObject(archiveHourKey(workspaceId, 'message_events', H)))
      archived.push(line);
    expect(archived).toEqual(hot.lines);

    // Hours later the hot rows have expired: the window comes from the archive, the same lines and positions.
    const later = H + 5 * HOUR;
    const source = new ArchivedEventSource({
      hot: hotAt(later),
      archive,
      coverage: cursors,
      hotRetentionMs: RETENTION_MS,
      now: () => later,
    });
    const read = (afterKey?: string) =>
      source.readWindow(workspaceId, 'message_events', H - 1, H + HOUR - 1, afterKey);
    expect(await collect(read())).toEqual(hot);
    const kept = await collect(latestPerKey(read, lineKeyOf('message_id')));
    expect(kept.lines.map((line) => JSON.parse(line)).map((r) => [r.message_id, r.status])).toEqual([
      ['m2', 'queued'],
      ['m1', 'delivered'],
    ]);
  });
});
