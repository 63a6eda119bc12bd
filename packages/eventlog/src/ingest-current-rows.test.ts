import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { describe, expect, it } from 'vitest';
import { eventTables } from '../../../test/helpers/tables.js';
import { CurrentRowStore } from './current-rows.js';
import { EventLogWriter } from './ingest.js';
import { EventLogReader } from './reader.js';

/** `message_events` and `project_summary` through `ingestEvents` (the bus's and the CLI's path), on DynamoDB Local. */

const NOW = Date.parse('2026-09-30T12:00:00.000Z');
const MINUTE = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();
const logger = new Logger({ serviceName: 'test', logLevel: 'SILENT' });

function setup(explicitRecordedAt: 'ignore' | 'unchecked' = 'unchecked') {
  const writer = new EventLogWriter({ ...eventTables, now: () => NOW, logger, explicitRecordedAt });
  const reader = new EventLogReader({ ...eventTables, now: () => NOW });
  const store = new CurrentRowStore({ ...eventTables, now: () => NOW });
  return { writer, reader, store, workspaceId: `ws_${randomUUID()}` };
}

const message = (id: string, extra: Record<string, unknown> = {}) => ({
  dataset: 'message_events',
  message_id: id,
  conversation_id: 'conv_1',
  direction: 'outbound',
  status: 'queued',
  from_phone_number: '471016',
  to_phone_number: '5555550123',
  media_url_count: 0,
  created_at: iso(NOW - 10 * MINUTE),
  updated_at: iso(NOW - 10 * MINUTE),
  ...extra,
});

async function files(reader: EventLogReader, workspaceId: string) {
  const lines: Record<string, unknown>[] = [];
  for await (const page of reader.readWindow(workspaceId, 'message_events', NOW - 60 * MINUTE, NOW + MINUTE))
    for (const line of page.lines) lines.push(JSON.parse(line));
  return lines;
}

describe('EventLogWriter.ingestEvents, current-row datasets', () => {
  it('keeps the current row, emits on status changes, counts what it ignores and refuses the unknown', async () => {
    const { writer, reader, store, workspaceId } = setup();
    const result = await writer.ingestEvents(workspaceId, [
      message('m1', { send_type: 'test' }),
      { dataset: 'message_events', message_id: 'm1', url_click_count: 4, updated_at: iso(NOW - 9 * MINUTE) },
      { dataset: 'message_events', message_id: 'm1', status: 'delivered', updated_at: iso(NOW - 8 * MINUTE) },
      { dataset: 'message_events', message_id: 'm1', status: 'failed', updated_at: iso(NOW - 9 * MINUTE) },
      { dataset: 'message_events', message_id: 'm2', status: 'delivered', updated_at: iso(NOW) },
      { dataset: 'project_summary', project_id: 'p1', name: 'GOTV', completed_at: null },
    ]);
    expect(result).toMatchObject({
      accepted: 3,
      currentRows: { emitted: 2, kept: 1, outOfOrder: 1, notComplete: 1, afterCompletion: 0 },
    });
    expect(result.invalid).toHaveLength(1);
    expect(result.invalid[0]).toMatchObject({
      index: 4,
      reason: expect.stringMatching(/message_id: no message with this id was received/),
    });
    const rows = await files(reader, workspaceId);
    expect(rows.map((row) => [row.status, row.url_click_count, row.send_type])).toEqual([
      ['queued', null, 'test'],
      ['delivered', 4, 'test'],
    ]);
    // Normalised, owned by the workspace; Sluice's row id is unique per emission.
    expect(rows[1]).toMatchObject({ to_phone_number: '+15555550123', organization_id: workspaceId });
    expect(new Set(rows.map((row) => row.id)).size).toBe(2);
    expect(await store.current(workspaceId, 'message_events', 'm1')).toMatchObject({ status: 'delivered' });
  });

  it('writes the columns "at export time" as held when the status change is recorded, never changed after', async () => {
    // Prepare: each input a call of its own, as a producer's stream arrives.
    const { writer, reader, store, workspaceId } = setup();
    const change = (minute: number, fields: Record<string, unknown>) => ({
      dataset: 'message_events',
      message_id: 'm1',
      updated_at: iso(NOW - 10 * MINUTE + minute * MINUTE),
      ...fields,
    });
    const ingest = async (input: Record<string, unknown>) =>
      expect((await writer.ingestEvents(workspaceId, [input])).invalid).toEqual([]);
    const atExportTime = (rows: Record<string, unknown>[]) =>
      rows.map((row) => [row.status, row.project_name, row.url_click_count]);

    // Act: a rename and a click (kept), the status change that carries them, then a rename and a click after it.
    await ingest(message('m1', { project_name: 'GOTV' }));
    await ingest(change(1, { project_name: 'GOTV final', url_click_count: 1 }));
    await ingest(change(2, { status: 'sent' }));
    await ingest(change(3, { project_name: 'GOTV 2027', url_click_count: 2 }));
    const before = await files(reader, workspaceId);
    await ingest(change(4, { status: 'delivered' }));
    const after = await files(reader, workspaceId);

    // Assess: each emitted row holds the values of its own status change; the later ones wait in the state for
    // the next status change, and no emitted row is changed by them (a window written again has the same rows).
    expect(atExportTime(before)).toEqual([
      ['queued', 'GOTV', null],
      ['sent', 'GOTV final', 1],
    ]);
    expect(atExportTime(after)).toEqual([...atExportTime(before), ['delivered', 'GOTV 2027', 2]]);
    expect(after.slice(0, 2)).toEqual(before);
    expect(await store.current(workspaceId, 'message_events', 'm1')).toMatchObject({
      status: 'delivered',
      project_name: 'GOTV 2027',
      url_click_count: 2,
    });
  });

  it('a retried call changes nothing and emits nothing again', async () => {
    const { writer, reader, workspaceId } = setup('ignore');
    const call = [
      message('m1'),
      { dataset: 'message_events', message_id: 'm1', status: 'sent', updated_at: iso(NOW - 5 * MINUTE) },
    ];
    const first = await writer.ingestEvents(workspaceId, call);
    const again = await writer.ingestEvents(workspaceId, call);
    expect(first.currentRows).toMatchObject({ emitted: 2 });
    expect(again.currentRows).toMatchObject({ emitted: 0, outOfOrder: 2 });
    expect(await files(reader, workspaceId)).toHaveLength(2);
  });
});
