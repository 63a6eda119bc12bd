import { randomUUID } from 'node:crypto';
import { ArchiveBucket, ArchiveCompactor, archiveHourKey, createArchiveClient } from '@sluice/archive';
import { ArchiveCursorStore } from '@sluice/control';
import {
  DynamoRejectedEvents,
  EventLogReader,
  EventLogWriter,
  generateEvents,
  workspaceSource,
} from '@sluice/eventlog';
import { beforeAll, describe, expect, it } from 'vitest';
import { controlTable, eventTables } from '../../../../test/helpers/tables.js';
import { loadRuntimeConfig } from '@sluice/local/runtime-config';
import { UsageError } from '../context.js';
import { runCommands } from './command.js';
import { createEraseCommands } from './erase.js';

const HOUR = 3_600_000;
const H = Math.floor(Date.now() / HOUR) * HOUR - 3 * HOUR;
const archive = new ArchiveBucket({
  bucket: process.env.SLUICE_ARCHIVE_BUCKET as string,
  client: createArchiveClient({ localEndpoint: process.env.SLUICE_LOCAL_S3_ENDPOINT as string }),
});
const reader = new EventLogReader(eventTables);

function erase(): { run: (args: string[]) => Promise<void>; lines: string[] } {
  const lines: string[] = [];
  // A one-day event log: the hours searched are the retention and the days TTL takes to delete.
  const env = { ...process.env, SLUICE_EVENT_RETENTION_DAYS: '1' };
  const commands = createEraseCommands({
    out: (line) => lines.push(line),
    config: () => loadRuntimeConfig(env),
  });
  return { run: (args) => runCommands(commands, ['erase', ...args]), lines };
}

async function archivedLines(workspaceId: string): Promise<string[]> {
  const lines: string[] = [];
  for await (const line of archive.readHour(workspaceId, 'sms_events', H)) lines.push(line);
  return lines;
}

describe('erase', () => {
  const workspaceId = `ws_${randomUUID()}`;

  beforeAll(async () => {
    // 60 SMS events three hours ago, 5 of them one subscriber's, in the event log and the archive.
    const events = [
      ...generateEvents({
        count: 60,
        workspaceId,
        seed: 11,
        from: H,
        to: H + HOUR - 1,
        mix: { sms_events: 1 },
      }),
    ].map((event, index) => (index % 12 === 0 ? { ...event, subscriber_id: 'sub_gone' } : event));
    const writer = new EventLogWriter({ ...eventTables, explicitRecordedAt: 'unchecked' });
    expect(
      (await writer.ingestEvents(workspaceId, events as unknown as Record<string, unknown>[])).accepted,
    ).toBe(60);
    await new ArchiveCompactor({
      hot: reader,
      archive,
      cursors: new ArchiveCursorStore(controlTable),
      hotRetentionMs: 24 * HOUR,
    }).compactDataset(workspaceId, 'sms_events');
    expect(await archivedLines(workspaceId)).toHaveLength(60);
    // One of the subscriber's rows that ingestion refused, kept in the control table.
    const refused = { ...events[0], subscriber_id: 'sub_gone', occurred_at: 'yesterday' };
    await new DynamoRejectedEvents(controlTable).put({
      workspaceId,
      kind: 'rows',
      event: {
        id: randomUUID(),
        source: workspaceSource(workspaceId),
        'detail-type': 'sluice.events',
        time: new Date(H).toISOString(),
        detail: { workspaceId, events: [refused] },
      },
      reasons: ['events[0]: occurred_at: not a time'],
    });
  });

  it('is a command of the CLI', () => {
    expect(createEraseCommands().map((command) => command.name())).toEqual(['erase']);
  });

  it("deletes a subscriber's rows from the event log, the archive and the rejected events and says so", async () => {
    const { run, lines } = erase();
    await run(['--workspace', workspaceId, '--subscriber', 'sub_gone']);
    expect(lines).toEqual([
      `Erased subscriber sub_gone of workspace ${workspaceId}:`,
      '  event log: 5 rows deleted',
      '  subscribers table: 0 items deleted',
      '  current rows (messages, projects): 0 deleted',
      '  archive: 5 rows removed; 1 objects rewritten, 0 deleted (of 1 read); 0 object versions removed',
      '  rejected events: 1 rows removed; 0 rewritten, 1 deleted',
      'Files already delivered to customers are not touched.',
    ]);
    expect(await reader.countWindow(workspaceId, 'sms_events', H - 1, H + HOUR)).toBe(55);
    const left = await archivedLines(workspaceId);
    expect(left).toHaveLength(55);
    expect(left.filter((line) => line.includes('sub_gone'))).toEqual([]);
  });

  it('deletes a whole workspace, reporting JSON with --json', async () => {
    const { run, lines } = erase();
    await run(['--workspace', workspaceId, '--all', '--json']);
    expect(JSON.parse(lines[0] ?? '')).toMatchObject({ hotRows: 55, archiveObjectsDeleted: 1 });
    expect(await archive.exists(archiveHourKey(workspaceId, 'sms_events', H))).toBe(false);
    expect(await reader.countWindow(workspaceId, 'sms_events', H - 1, H + HOUR)).toBe(0);
  });

  it('refuses an invocation without exactly one target, or a bad address', async () => {
    const { run } = erase();
    await expect(run(['--workspace', workspaceId])).rejects.toThrow(UsageError);
    await expect(run(['--workspace', workspaceId, '--all', '--subscriber', 'x'])).rejects.toThrow(
      'Give exactly one of --subscriber, --email, --phone, --contact or --all',
    );
    await expect(run(['--subscriber', 'x'])).rejects.toThrow('--workspace is required');
    await expect(run(['--workspace', workspaceId, '--email', 'nobody'])).rejects.toThrow(
      'Invalid e-mail address',
    );
  });
});
