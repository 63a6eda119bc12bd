import { randomUUID } from 'node:crypto';
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { Logger } from '@aws-lambda-powertools/logger';
import { EVENT_DATASETS, type EventDataset, InvalidInputError, parseRow, serializeRow } from '@sluice/core';
import { describe, expect, it, vi } from 'vitest';
import { defaultEventLogClient } from './client.js';
import type { ExportPositions } from './export-positions.js';
import { EventLogWriter } from './ingest.js';
import { eventSk, hourStart } from './keys.js';
import type { IngestMetrics } from './metrics.js';
import { EventLogReader } from './reader.js';
import { decodeSegment, segmentPk } from './segments.js';
import { eventTables } from '../../../test/helpers/tables.js';

const NOW = Date.parse('2026-09-30T12:00:00.000Z');
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

function setup(now = NOW) {
  const logger = new Logger({ serviceName: 'test', logLevel: 'SILENT' });
  const warn = vi.spyOn(logger, 'warn');
  const writer = new EventLogWriter({
    ...eventTables,
    now: () => now,
    logger,
    explicitRecordedAt: 'unchecked',
  });
  // The fixed dates lie further back than the retention: read with the same clock that wrote.
  const reader = new EventLogReader({ ...eventTables, now: () => now });
  const workspaceId = `ws_${randomUUID()}`;
  return { writer, reader, workspaceId, warn };
}

function email(id: string, occurredMs: number, extra: Record<string, unknown> = {}) {
  return {
    dataset: 'email_events',
    id,
    event_type: 'delivered',
    occurred_at: new Date(occurredMs).toISOString(),
    subscriber_id: 'sub_1',
    email: 'ada@example.com',
    email_send_id: 'send_1',
    message_type: 'campaign',
    campaign_id: 'cmp_1',
    ...extra,
  };
}

async function readAll(
  reader: EventLogReader,
  workspaceId: string,
  dataset: EventDataset,
  fromMs: number,
  toMs: number,
) {
  const lines: string[] = [];
  for await (const page of reader.readWindow(workspaceId, dataset, fromMs, toMs)) lines.push(...page.lines);
  return lines;
}

describe('EventLogWriter.ingestEvents', () => {
  it('writes valid events as their serialized line, recorded now, with the expected keys and TTL', async () => {
    // Prepare
    const { writer, reader, workspaceId } = setup();
    const input = email('evt_a', NOW - 5_000);

    // Act
    const result = await writer.ingestEvents(workspaceId, [
      input,
      { dataset: 'sms_events', id: 'sms_a', event_type: 'delivered', occurred_at: NOW - 1_000, segments: 2 },
      {
        dataset: 'custom_events',
        id: 'ce_a',
        event_name: 'order.placed',
        occurred_at: NOW,
        properties: { total: 12.5 },
      },
    ]);

    // Assess
    expect(result).toEqual({
      accepted: 3,
      duplicates: 0,
      dropped: { test: 0, history: 0, late: 0 },
      invalid: [],
      refusedBehindExport: 0,
      recordedAtIgnored: 0,
    });
    const { dataset: _dataset, ...fields } = input;
    const expected = parseRow('email_events', { ...fields, recorded_at: NOW });
    if (!expected.ok) throw new Error(expected.reason);
    const lines = await readAll(reader, workspaceId, 'email_events', NOW - HOUR, NOW);
    expect(lines).toEqual([serializeRow('email_events', expected.row)]);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      recorded_at: '2026-09-30T12:00:00.000Z',
      schema_version: 1,
    });

    // One segment item of the hour's segment partition: the row's position and line, compressed, and its TTL.
    const segments = await defaultEventLogClient().send(
      new QueryCommand({
        TableName: process.env.SLUICE_EVENTS_TABLE,
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': { S: segmentPk(workspaceId, 'email_events', hourStart(NOW)) } },
      }),
    );
    expect(segments.Items).toHaveLength(1);
    const item = segments.Items![0]!;
    expect(item.SK?.S).toMatch(new RegExp(`^${NOW}#${NOW}#${NOW}[0-9a-f]{8}0000$`));
    expect(decodeSegment(item.rows!.B!)).toEqual([{ key: eventSk(NOW, 'evt_a'), line: lines[0] }]);
    expect(item.lastMs?.N).toBe(String(NOW));
    expect(item.count?.N).toBe('1');
    expect(item.expiresAt?.N).toBe(String(NOW / 1000 + 35 * 86_400));
    expect(await readAll(reader, workspaceId, 'sms_events', NOW - HOUR, NOW)).toHaveLength(1);
    expect(
      JSON.parse((await readAll(reader, workspaceId, 'custom_events', NOW - HOUR, NOW))[0]!).properties,
    ).toEqual({
      total: 12.5,
    });
  });

  it('drops test sends, history imports and events recorded more than 7 days late', async () => {
    const { writer, reader, workspaceId } = setup();

    const result = await writer.ingestEvents(workspaceId, [
      email('evt_test', NOW, { test: true }),
      email('evt_test_false', NOW, { test: false }),
      email('evt_import_old', NOW - HOUR - 1, { import: true }),
      email('evt_source_old', NOW - 2 * DAY, { source: 'import' }),
      email('evt_import_recent', NOW - HOUR, { source: 'import' }),
      email('evt_late', NOW - 7 * DAY - 1),
      email('evt_seven_days', NOW - 7 * DAY),
    ]);

    expect(result.dropped).toEqual({ test: 1, history: 2, late: 1 });
    expect(result.accepted).toBe(3);
    expect(result.invalid).toEqual([]);
    const ids = (await readAll(reader, workspaceId, 'email_events', NOW - 1, NOW)).map(
      (line) => JSON.parse(line).id,
    );
    expect(ids.sort()).toEqual(['evt_import_recent', 'evt_seven_days', 'evt_test_false']);
    // Envelope fields are not row fields.
    for (const line of await readAll(reader, workspaceId, 'email_events', NOW - 1, NOW)) {
      const keys = Object.keys(JSON.parse(line));
      for (const envelope of ['test', 'source', 'import', 'dataset']) expect(keys).not.toContain(envelope);
    }
  });

  it('refuses invalid events with their index and a reason, writes the rest, and logs no values', async () => {
    const { writer, reader, workspaceId, warn } = setup();

    const result = await writer.ingestEvents(workspaceId, [
      email('evt_ok', NOW),
      email('evt_bad_type', NOW, { event_type: 'viewed', email: 'secret.person@example.com' }),
      { ...email('evt_no_dataset', NOW), dataset: 'page_views' },
      'not an object',
      email('evt_bad_time', NOW, { occurred_at: 'last tuesday' }),
      email('evt_future', NOW + DAY + 1),
      email('evt_bad_recorded', NOW, { recorded_at: 'soon' }),
      email('has space', NOW),
      email('evt_test_flag', NOW, { test: 'yes' }),
    ]);

    expect(result.accepted).toBe(1);
    expect(result.invalid).toEqual([
      { index: 1, reason: expect.stringMatching(/^event_type: /) },
      { index: 2, reason: `dataset: must be one of ${EVENT_DATASETS.join(', ')}` },
      { index: 3, reason: '(event): must be an object' },
      { index: 4, reason: expect.stringMatching(/^occurred_at: /) },
      { index: 5, reason: 'occurred_at: more than 24 hours after the recorded time' },
      { index: 6, reason: expect.stringMatching(/^recorded_at: /) },
      { index: 7, reason: expect.stringMatching(/^id: /) },
      { index: 8, reason: 'test: must be a boolean' },
    ]);
    expect(
      (await readAll(reader, workspaceId, 'email_events', NOW - 1, NOW)).map((l) => JSON.parse(l).id),
    ).toEqual(['evt_ok']);
    expect(warn).toHaveBeenCalledTimes(1);
    const logged = JSON.stringify(warn.mock.calls[0]);
    expect(logged).toContain('evt_bad_type');
    expect(logged).toContain('"invalidCount":8');
    expect(logged).not.toContain('secret.person');
    expect(logged).not.toContain('viewed');
  });

  it('uses an explicit recorded_at, and writes an exact duplicate once', async () => {
    const { writer, reader, workspaceId } = setup();
    const recorded = NOW - 3 * HOUR;

    const result = await writer.ingestEvents(workspaceId, [
      email('evt_x', recorded - 10, { recorded_at: new Date(recorded).toISOString() }),
      email('evt_x', recorded - 10, { recorded_at: recorded }),
      email('evt_y', recorded - 10, { recorded_at: recorded }),
    ]);
    // A retry of the same call with the same recorded time rewrites the same items.
    await writer.ingestEvents(workspaceId, [email('evt_y', recorded - 10, { recorded_at: recorded })]);

    expect(result).toMatchObject({ accepted: 2, duplicates: 1 });
    const lines = await readAll(reader, workspaceId, 'email_events', recorded - 1, recorded);
    expect(lines.map((l) => JSON.parse(l).id)).toEqual(['evt_x', 'evt_y']);
    expect(JSON.parse(lines[0]!).recorded_at).toBe(new Date(recorded).toISOString());
    expect(await readAll(reader, workspaceId, 'email_events', recorded, NOW)).toEqual([]);
  });

  it('refuses a workspace id that could break the keys', async () => {
    const { writer } = setup();
    await expect(writer.ingestEvents('a#b', [email('evt_1', NOW)])).rejects.toBeInstanceOf(InvalidInputError);
    await expect(writer.ingestEvents('', [])).rejects.toBeInstanceOf(InvalidInputError);
  });

  it('writes more than one batch of 25', async () => {
    const { writer, reader, workspaceId } = setup();
    const inputs = Array.from({ length: 130 }, (_, i) => email(`evt_${String(i).padStart(3, '0')}`, NOW - i));
    const result = await writer.ingestEvents(workspaceId, inputs);
    expect(result.accepted).toBe(130);
    expect(await reader.countWindow(workspaceId, 'email_events', NOW - 1, NOW)).toBe(130);
  });
});

describe('EventLogWriter.ingestEvents in slices', () => {
  it('records each slice of 1,000 when it is written and keeps indexes relative to the call', async () => {
    // Prepare: a clock that moves a second each time it is read.
    let clock = NOW;
    const logger = new Logger({ serviceName: 'test', logLevel: 'SILENT' });
    const writer = new EventLogWriter({
      ...eventTables,
      now: () => (clock += 1_000),
      logger,
      explicitRecordedAt: 'unchecked',
    });
    const workspaceId = `ws_${randomUUID()}`;
    const inputs: unknown[] = Array.from({ length: 2_500 }, (_, i) => email(`evt_${i}`, NOW - 60_000));
    inputs[2_100] = email('evt_bad', NOW, { message_type: 'newsletter' });

    // Act
    const result = await writer.ingestEvents(workspaceId, inputs);

    // Assess
    expect(result.accepted).toBe(2_499);
    expect(result.invalid).toEqual([{ index: 2_100, reason: expect.stringMatching(/^message_type: /) }]);
    const reader = new EventLogReader({ ...eventTables, now: () => clock });
    const counts = await Promise.all(
      [1, 2, 3].map((s) =>
        reader.countWindow(workspaceId, 'email_events', NOW + s * 1_000 - 1, NOW + s * 1_000),
      ),
    );
    expect(counts).toEqual([1_000, 1_000, 499]);
  });
});

describe('EventLogWriter and explicit recorded times', () => {
  /** A fake port (this tests the writer's logic; `ControlExportPositions` is tested on DynamoDB Local). */
  function positionsOf(entries: [EventDataset, number][]) {
    const calls: string[] = [];
    const port: ExportPositions = {
      async highestPositions(workspaceId) {
        calls.push(workspaceId);
        return new Map(entries);
      },
    };
    return { port, calls };
  }

  function checkingSetup(entries: [EventDataset, number][]) {
    const { port, calls } = positionsOf(entries);
    const refusals: { workspaceId: string; dataset: string; count: number }[] = [];
    const metrics: IngestMetrics = {
      refusedBehindExport: (workspaceId, dataset, count) => refusals.push({ workspaceId, dataset, count }),
    };
    const logger = new Logger({ serviceName: 'test', logLevel: 'SILENT' });
    const writer = new EventLogWriter({
      ...eventTables,
      now: () => NOW,
      logger,
      metrics,
      explicitRecordedAt: { refuseAtOrBehind: port },
      // The late hours' marking is tested with the archive (`@sluice/archive` late-imports.test.ts).
      lateHours: { markLate: async () => {} },
    });
    return { writer, calls, refusals, reader: new EventLogReader({ ...eventTables, now: () => NOW }) };
  }

  it('refuses a recorded_at at or behind the export position of its dataset, with a reason, and writes the rest', async () => {
    // Prepare: email_events exported through an hour ago; custom_events never exported.
    const position = NOW - HOUR;
    const { writer, calls, refusals, reader } = checkingSetup([['email_events', position]]);
    const workspaceId = `ws_${randomUUID()}`;
    const custom = (id: string, recordedMs: number) => ({
      dataset: 'custom_events',
      id,
      event_name: 'e',
      occurred_at: recordedMs - 1,
      recorded_at: recordedMs,
    });

    // Act
    const result = await writer.ingestEvents(workspaceId, [
      email('at_position', position - 10, { recorded_at: position }),
      email('behind', position - 10, { recorded_at: new Date(position - HOUR).toISOString() }),
      email('ahead', position - 10, { recorded_at: position + 1 }),
      email('recorded_now', NOW - 10),
      custom('custom_behind_email', position - HOUR),
    ]);

    // Assess
    const reason = new RegExp(
      `^recorded_at: at or before ${new Date(position).toISOString()}, .* for email_events: the row would never be exported`,
    );
    expect(result).toMatchObject({
      accepted: 3,
      refusedBehindExport: 2,
      invalid: [
        { index: 0, reason: expect.stringMatching(reason) },
        { index: 1, reason: expect.stringMatching(reason) },
      ],
    });
    expect(refusals).toEqual([{ workspaceId, dataset: 'email_events', count: 2 }]);
    expect(calls).toEqual([workspaceId]);
    const emails = await readAll(reader, workspaceId, 'email_events', position - 2 * HOUR, NOW);
    expect(emails.map((line) => JSON.parse(line).id)).toEqual(['ahead', 'recorded_now']);
    expect(await readAll(reader, workspaceId, 'custom_events', position - 2 * HOUR, NOW)).toHaveLength(1);
  });

  it('reads the positions once per slice with an explicit time, never for rows recorded now', async () => {
    const { writer, calls } = checkingSetup([]);
    const workspaceId = `ws_${randomUUID()}`;
    const explicit = Array.from({ length: 2_500 }, (_, i) =>
      email(`x_${i}`, NOW - HOUR, { recorded_at: NOW - 1 }),
    );
    const recordedNow = Array.from({ length: 1_500 }, (_, i) => email(`n_${i}`, NOW - HOUR));

    const first = await writer.ingestEvents(workspaceId, explicit);
    const readsForExplicit = calls.length;
    const second = await writer.ingestEvents(workspaceId, recordedNow);

    expect(first.accepted + second.accepted).toBe(4_000);
    expect(readsForExplicit).toBe(3);
    expect(calls).toHaveLength(3);
  });

  it("ignores a producer's recorded_at when told to, and records the row at the ingest's clock", async () => {
    // Prepare
    const logger = new Logger({ serviceName: 'test', logLevel: 'SILENT' });
    const writer = new EventLogWriter({
      ...eventTables,
      now: () => NOW,
      logger,
      explicitRecordedAt: 'ignore',
    });
    const reader = new EventLogReader({ ...eventTables, now: () => NOW });
    const workspaceId = `ws_${randomUUID()}`;

    // Act
    const result = await writer.ingestEvents(workspaceId, [
      email('old_time', NOW - 2 * HOUR, { recorded_at: NOW - HOUR }),
      email('bad_time', NOW - 2 * HOUR, { recorded_at: 'yesterday' }),
    ]);

    // Assess
    expect(result).toMatchObject({ accepted: 2, recordedAtIgnored: 2, invalid: [] });
    const lines = await readAll(reader, workspaceId, 'email_events', NOW - 2 * HOUR, NOW);
    expect(lines.map((line) => JSON.parse(line).recorded_at)).toEqual([
      new Date(NOW).toISOString(),
      new Date(NOW).toISOString(),
    ]);
  });
});

describe('EventLogWriter subscribers', () => {
  it('upserts, replaces, deletes and reads subscribers across shards', async () => {
    // Prepare
    const { writer, reader, workspaceId, warn } = setup();
    const subscriber = (id: string, extra: Record<string, unknown> = {}) => ({
      id,
      email: `${id}@example.com`,
      status: 'active',
      tags: ['vip'],
      custom_attributes: { plan: 'pro' },
      created_at: '2026-01-01T00:00:00Z',
      updated_at: '2026-09-01T00:00:00Z',
      ...extra,
    });
    const ids = Array.from({ length: 40 }, (_, i) => `sub_${i}`);

    // Act
    const upserted = await writer.upsertSubscribers(workspaceId, [
      ...ids.map((id) => subscriber(id)),
      subscriber('sub_bad', { status: undefined }),
    ]);
    await writer.upsertSubscribers(workspaceId, [subscriber('sub_1', { status: 'unsubscribed' })]);
    const deleted = await writer.deleteSubscribers(workspaceId, [
      'sub_2',
      'sub_3',
      'sub_never_existed',
      'bad id',
    ]);
    const lines: string[] = [];
    for await (const page of reader.readSubscribers(workspaceId)) lines.push(...page.lines);

    // Assess
    expect(upserted).toEqual({
      accepted: 40,
      invalid: [{ index: 40, reason: expect.stringMatching(/^status: /) }],
    });
    expect(deleted).toEqual({ accepted: 3, invalid: [{ index: 3, reason: expect.stringMatching(/^id: /) }] });
    const rows = lines.map((line) => JSON.parse(line));
    expect(rows.map((row) => row.id).sort()).toEqual(
      ids.filter((id) => id !== 'sub_2' && id !== 'sub_3').sort(),
    );
    expect(rows.find((row) => row.id === 'sub_1')).toMatchObject({
      status: 'unsubscribed',
      schema_version: 1,
    });
    expect(rows[0]).not.toHaveProperty('snapshot_date');
    expect(warn).toHaveBeenCalled();
  });

  it('reads subscribers in pages', async () => {
    const { writer, workspaceId } = setup();
    await writer.upsertSubscribers(
      workspaceId,
      Array.from({ length: 30 }, (_, i) => ({
        id: `s${i}`,
        status: 'active',
        created_at: '2026-01-01T00:00:00Z',
        updated_at: '2026-01-01T00:00:00Z',
      })),
    );
    const reader = new EventLogReader({ ...eventTables, pageLimit: 4, now: () => NOW });
    const pages: string[][] = [];
    for await (const page of reader.readSubscribers(workspaceId)) pages.push(page.lines);
    expect(pages.flat()).toHaveLength(30);
    expect(Math.max(...pages.map((p) => p.length))).toBeLessThanOrEqual(4);
    expect(new Set(pages.flat()).size).toBe(30);
  });
});

describe("EventLogWriter.ingestEvents, the second product's datasets", () => {
  const message = (id: string, extra: Record<string, unknown> = {}) => ({
    dataset: 'message_events',
    message_id: id,
    conversation_id: 'cnv_1',
    direction: 'outbound',
    status: 'sent',
    from_phone_number: '471016',
    to_phone_number: '555 555 0123',
    media_url_count: 0,
    send_type: 'test',
    error_code: '40300',
    error_reason: 'Unreachable',
    created_at: NOW - 30 * DAY,
    ...extra,
  });

  it('keeps test sends and rows older than 7 days, fills organization_id, normalizes, and refuses what it cannot, counted', async () => {
    // Prepare
    const { writer, reader, workspaceId } = setup();
    const optOut = {
      dataset: 'opt_out_events',
      opt_out_id: 'opt_1',
      phone_number: '+1 555 555 0199',
      source: 'Replied',
      organization_id: 'someone_else',
      created_at: NOW - 10 * DAY,
      test: true,
    };

    // Act
    const result = await writer.ingestEvents(workspaceId, [
      message('msg_1'),
      optOut,
      message('msg_2', { to_phone_number: 'not a number' }),
      message('msg_3', { direction: 'sideways' }),
    ]);

    // Assess
    expect(result).toMatchObject({ accepted: 2, dropped: { test: 0, history: 0, late: 0 } });
    expect(result.invalid).toEqual([
      { index: 2, reason: expect.stringMatching(/^to_phone_number: must be a phone number in E\.164/) },
      { index: 3, reason: expect.stringMatching(/^direction: /) },
    ]);
    const [line] = await readAll(reader, workspaceId, 'message_events', NOW - 1, NOW);
    expect(JSON.parse(line!)).toMatchObject({
      // Sluice's row id of an emitted message row: `<message_id>@<updated_at ms>` (`-`: none), as in its sort key.
      id: 'msg_1@-',
      recorded_at: new Date(NOW).toISOString(),
      message_id: 'msg_1',
      send_type: 'test',
      to_phone_number: '+15555550123',
      from_phone_number: '471016',
      error_code: '300',
      error_reason: 'Unreachable',
      organization_id: workspaceId,
    });
    expect(line).not.toContain('schema_version');
    const [opt] = await readAll(reader, workspaceId, 'opt_out_events', NOW - 1, NOW);
    expect(JSON.parse(opt!)).toMatchObject({
      source: 'Replied',
      phone_number: '+15555550199',
      organization_id: workspaceId,
    });
  });
});
