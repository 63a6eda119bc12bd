import { randomUUID } from 'node:crypto';
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { Logger } from '@aws-lambda-powertools/logger';
import { ArchiveCursorStore, ErasureLogStore } from '@sluice/control';
import { EVENT_DATASETS, type EventDataset, erasureHash } from '@sluice/core';
import {
  CurrentRowStore,
  DynamoRejectedEvents,
  EVENT_SHARDS,
  EventLogReader,
  EventLogWriter,
  eventPk,
  eventSk,
  generateEvents,
  generateSubscribers,
  hourStart,
  MAX_RECORDED_AHEAD_MS,
  redriveDeadLetters,
  shardOf,
  workspaceSource,
} from '@sluice/eventlog';
import { beforeAll, describe, expect, it } from 'vitest';
import { controlTable, eventTables } from '../../../test/helpers/tables.js';
import { ArchiveBucket, createArchiveClient } from './bucket.js';
import { ArchiveCompactor } from './compaction.js';
import { Eraser } from './erasure.js';
import { archiveHourKey } from './keys.js';

/**
 * Erasure reaches every dataset: a person's email, SMS and custom events (by subscriber id, `email` and
 * `properties.email`), rows without a subscriber id, rows recorded ahead of now, the subscribers table, and
 * the archive; and nothing of a workspace whose id extends this one's archive prefix. Against DynamoDB Local
 * and s3rver, with the clocks given.
 */

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const RETENTION_MS = 90 * MINUTE;
const H = Math.floor(Date.now() / HOUR) * HOUR - 6 * HOUR;
/** The erasure's clock: the hour `H` is archived and still hot. */
const NOW = H + 80 * MINUTE;
const archive = new ArchiveBucket({
  bucket: process.env.SLUICE_ARCHIVE_BUCKET as string,
  client: createArchiveClient({ localEndpoint: process.env.SLUICE_LOCAL_S3_ENDPOINT as string }),
});
const erasureLog = new ErasureLogStore(controlTable);
const dynamo = new DynamoDBClient({});
const hot = new EventLogReader({ ...eventTables, now: () => NOW });
const eraser = new Eraser({
  client: dynamo,
  ...eventTables,
  archive,
  erasureLog,
  rejected: new DynamoRejectedEvents(controlTable),
  hotRetentionMs: RETENTION_MS,
  now: () => NOW,
});
const writerAt = (nowMs: number) =>
  new EventLogWriter({
    ...eventTables,
    explicitRecordedAt: 'unchecked',
    // Rows that DynamoDB Local's TTL does not delete while the test runs (they are hours old on the real clock).
    retentionSeconds: 7 * 86_400,
    now: () => nowMs,
  });

type Row = Record<string, unknown>;

/** `count` generated rows of `dataset` recorded in `[H, H + 50 min)`, with `fields` set. */
function rows(dataset: EventDataset, count: number, seed: number, fields: Row = {}): Row[] {
  return [
    ...generateEvents({ count, workspaceId: 'x', seed, from: H, to: H + 50 * MINUTE, mix: { [dataset]: 1 } }),
    // Ids of their own: generated ids of different seeds may meet.
  ].map((event, index) => ({ ...(event as unknown as Row), id: `evt_${seed}_${index}`, ...fields }));
}

async function hotLines(workspaceId: string, dataset: EventDataset, fromMs: number, toMs: number) {
  const lines: string[] = [];
  for await (const page of hot.readWindow(workspaceId, dataset, fromMs, toMs)) lines.push(...page.lines);
  return lines;
}

async function archivedLines(workspaceId: string, dataset: EventDataset): Promise<string[]> {
  const lines: string[] = [];
  for await (const line of archive.readHour(workspaceId, dataset, H)) lines.push(line);
  return lines;
}

/** Every line of the workspace, hot (the hours around `H` and the day ahead) and archived. */
async function everyLine(workspaceId: string): Promise<string[]> {
  const lines: string[] = [];
  for (const dataset of EVENT_DATASETS) {
    lines.push(...(await hotLines(workspaceId, dataset, H - 1, NOW + MAX_RECORDED_AHEAD_MS)));
    lines.push(...(await archivedLines(workspaceId, dataset)));
  }
  return lines;
}

describe('erasure of a person', () => {
  const workspaceId = `ws_${randomUUID()}`;
  // Ann is in the subscribers table; Bob was deleted from it, only his email events link his id and address.
  const ann = { id: 'sub_ann', email: 'ann@example.com' };
  const bob = { id: 'sub_bob', email: 'bob@example.com' };
  const others = { email: 0, sms: 0, custom: 0 };

  beforeAll(async () => {
    const email = [
      ...rows('email_events', 40, 1),
      ...rows('email_events', 3, 2, { subscriber_id: ann.id, email: 'Ann@Example.com' }),
      ...rows('email_events', 2, 3, { subscriber_id: null, email: ann.email }),
      ...rows('email_events', 3, 4, { subscriber_id: bob.id, email: bob.email }),
      ...rows('email_events', 2, 5, { subscriber_id: null, email: 'BOB@example.com' }),
    ];
    const sms = [
      ...rows('sms_events', 30, 6),
      ...rows('sms_events', 3, 7, { subscriber_id: ann.id }),
      ...rows('sms_events', 2, 8, { subscriber_id: bob.id }),
    ];
    const custom = [
      ...rows('custom_events', 30, 9),
      ...rows('custom_events', 2, 10, { subscriber_id: ann.id }),
      ...rows('custom_events', 2, 11, { subscriber_id: null, properties: { email: 'ANN@example.com' } }),
      ...rows('custom_events', 2, 12, { subscriber_id: bob.id }),
      ...rows('custom_events', 1, 13, { subscriber_id: null, properties: { email: bob.email, plan: 'pro' } }),
    ];
    others.email = 40;
    others.sms = 30;
    others.custom = 30;
    const writer = writerAt(H);
    for (const batch of [email, sms, custom]) {
      expect((await writer.ingestEvents(workspaceId, batch)).invalid).toEqual([]);
    }
    // Imports recorded ahead of now, up to the latest time ingestion accepts.
    const ahead = NOW + MAX_RECORDED_AHEAD_MS - MINUTE;
    const aheadRows = [
      { ...rows('sms_events', 1, 14, { subscriber_id: ann.id })[0], recorded_at: ahead, occurred_at: ahead },
      {
        ...rows('email_events', 1, 15, { subscriber_id: bob.id, email: bob.email })[0],
        recorded_at: ahead,
        occurred_at: ahead,
      },
    ];
    expect((await writerAt(NOW).ingestEvents(workspaceId, aheadRows)).accepted).toBe(2);
    const subscribers = [...generateSubscribers({ workspaceId, count: 3 })].map((row, index) =>
      index === 0 ? { ...row, id: ann.id, email: ann.email } : row,
    );
    expect((await writer.upsertSubscribers(workspaceId, subscribers)).invalid).toEqual([]);
    const compactor = new ArchiveCompactor({
      hot: hot,
      archive,
      cursors: new ArchiveCursorStore(controlTable),
      hotRetentionMs: RETENTION_MS,
      now: () => NOW,
    });
    for (const dataset of EVENT_DATASETS) await compactor.compactDataset(workspaceId, dataset);
    expect(await archivedLines(workspaceId, 'custom_events')).toHaveLength(37);
  });

  it('refuses an import recorded further ahead than the hours erasure searches', async () => {
    const tooFar = NOW + MAX_RECORDED_AHEAD_MS + MINUTE;
    const row = { ...rows('sms_events', 1, 16)[0], recorded_at: tooFar, occurred_at: tooFar };
    const result = await writerAt(NOW).ingestEvents(`ws_${randomUUID()}`, [row]);
    expect(result.accepted).toBe(0);
    expect(result.invalid).toEqual([{ index: 0, reason: 'recorded_at: more than 24 hours ahead of now' }]);
  });

  it('--email removes the rows of every dataset linked to the address, in the hot log and the archive', async () => {
    const report = await eraser.erase(workspaceId, { kind: 'email', email: 'ann@EXAMPLE.com' });
    // 3 + 2 email, 3 + 1 (ahead) SMS, 2 + 2 custom events, hot and archived (the row ahead is not archived yet).
    expect(report).toMatchObject({ hotRows: 13, archiveRows: 12, subscribers: 1 });
    const left = await everyLine(workspaceId);
    expect(left.filter((line) => /sub_ann|ann@example\.com/i.test(line))).toEqual([]);
    expect(left.filter((line) => /sub_bob|bob@example\.com/i.test(line))).toHaveLength(11 + 10);
  });

  it('--subscriber removes rows without a subscriber id whose address is the subscriber’s', async () => {
    const report = await eraser.erase(workspaceId, { kind: 'subscriber', subscriberId: bob.id });
    // 3 + 2 + 1 (ahead) email, 2 SMS, 2 + 1 custom events.
    expect(report).toMatchObject({ hotRows: 11, archiveRows: 10, subscribers: 0 });
    const left = await everyLine(workspaceId);
    expect(left.filter((line) => /sub_bob|bob@example\.com/i.test(line))).toEqual([]);
    expect(left).toHaveLength(2 * (others.email + others.sms + others.custom));
  });

  it('records each erasure, by hashes only', async () => {
    const entries = await erasureLog.erasuresOf(workspaceId);
    expect(entries.map((entry) => entry.kind)).toContain('person');
    const all = entries.flatMap((entry) => [...entry.subscriberIdHashes, ...entry.emailHashes]);
    expect(all).toContain(erasureHash(workspaceId, 'subscriber', ann.id));
    expect(all).toContain(erasureHash(workspaceId, 'email', bob.email));
    expect(JSON.stringify(entries)).not.toMatch(/ann|bob/);
  });
});

describe('erasure of a workspace whose id prefixes another archive key', () => {
  const workspaceId = `ws_${randomUUID()}`;
  /** A workspace created before ids with `/` were refused: its objects are under `archive/<workspaceId>/`. */
  const nested = `${workspaceId}/email_events`;
  const line = (id: string) =>
    JSON.stringify({ id, email: 'ann@example.com', recorded_at: new Date(H + MINUTE).toISOString() });

  it('never reads, rewrites or deletes the other workspace’s objects', async () => {
    await archive.writeHour(workspaceId, 'email_events', H, [line('evt_own')]);
    await archive.writeHour(nested, 'email_events', H, [line('evt_nested')]);
    await archive.writeHour(nested, 'custom_events', H, [line('evt_nested_custom')]);

    const byEmail = await eraser.erase(workspaceId, { kind: 'email', email: 'ann@example.com' });
    expect(byEmail).toMatchObject({ archiveObjectsRead: 1, archiveRows: 1, archiveObjectsDeleted: 1 });
    await archive.writeHour(workspaceId, 'sms_events', H, [line('evt_own_sms')]);
    const all = await eraser.erase(workspaceId, { kind: 'all' });
    expect(all).toMatchObject({ archiveObjectsDeleted: 1 });

    expect(await archive.exists(archiveHourKey(workspaceId, 'sms_events', H))).toBe(false);
    expect(await archivedLines(nested, 'email_events')).toEqual([line('evt_nested')]);
    expect(await archivedLines(nested, 'custom_events')).toEqual([line('evt_nested_custom')]);
  });
});

describe('a redrive after an erasure', () => {
  const workspaceId = `ws_${randomUUID()}`;
  const gone = `ws_${randomUUID()}`;
  const logger = new Logger({ serviceName: 'test', logLevel: 'SILENT' });
  const sentBefore = new Date(NOW - 10 * MINUTE).toISOString();
  const sentAfter = new Date(NOW + MINUTE).toISOString();
  const redriveAt = NOW + 2 * MINUTE;
  const custom = (id: string, fields: Row) => ({
    dataset: 'custom_events',
    id,
    event_name: 'order.paid',
    occurred_at: NOW - 20 * MINUTE,
    ...fields,
  });
  const busEvent = (ws: string, time: string, detailType: string, detail: Row) => ({
    id: randomUUID(),
    source: workspaceSource(ws),
    'detail-type': detailType,
    time,
    detail: { workspaceId: ws, ...detail },
  });
  const queueOf = (events: object[]) => {
    const pending = events.map((event, i) => ({
      id: `m${i}`,
      body: JSON.stringify({ requestPayload: event }),
      receiptHandle: `r${i}`,
    }));
    const deleted: string[] = [];
    return {
      deleted,
      receive: async (max: number) => pending.splice(0, max),
      delete: async (l: { id: string }) => void deleted.push(l.id),
    };
  };

  it('leaves out the erased people’s rows sent before the erasure, and a whole erased workspace', async () => {
    const writer = writerAt(NOW - HOUR);
    const cat = [...generateSubscribers({ workspaceId, count: 1 })].map((row) => ({
      ...row,
      id: 'sub_cat',
      email: 'cat@example.com',
    }));
    expect((await writer.upsertSubscribers(workspaceId, cat)).accepted).toBe(1);
    await eraser.erase(workspaceId, { kind: 'email', email: 'Cat@example.com' });
    await eraser.erase(gone, { kind: 'all' });

    const queue = queueOf([
      busEvent(workspaceId, sentBefore, 'sluice.events', {
        events: [
          custom('ce_cat', { subscriber_id: 'sub_cat' }),
          custom('ce_cat_props', { properties: { email: 'CAT@example.com' } }),
          {
            dataset: 'sms_events',
            id: 'sms_cat',
            event_type: 'sent',
            occurred_at: NOW - 20 * MINUTE,
            subscriber_id: 'sub_cat',
          },
          custom('ce_dog', { subscriber_id: 'sub_dog' }),
        ],
      }),
      busEvent(workspaceId, sentBefore, 'sluice.subscribers', {
        upsert: [{ ...cat[0], email: 'cat@example.com' }],
      }),
      busEvent(workspaceId, sentAfter, 'sluice.events', {
        events: [custom('ce_cat_later', { subscriber_id: 'sub_cat' })],
      }),
      busEvent(gone, sentBefore, 'sluice.events', { events: [custom('ce_gone', {})] }),
    ]);
    const redriveWriter = new EventLogWriter({
      ...eventTables,
      explicitRecordedAt: 'ignore',
      now: () => redriveAt,
    });
    const summary = await redriveDeadLetters(queue, redriveWriter, logger, { erasures: erasureLog });

    expect(summary).toMatchObject({
      messages: 4,
      redriven: 4,
      left: [],
      events: { accepted: 2 },
      subscribers: { upserted: 0 },
      erased: { events: 4, subscribers: 1 },
    });
    expect(queue.deleted).toEqual(['m0', 'm1', 'm2', 'm3']);
    const ids = async (ws: string, dataset: EventDataset) =>
      (await hotLines(ws, dataset, redriveAt - 1, redriveAt)).map((line) => JSON.parse(line).id).sort();
    expect(await ids(workspaceId, 'custom_events')).toEqual(['ce_cat_later', 'ce_dog']);
    expect(await ids(workspaceId, 'sms_events')).toEqual([]);
    expect(await ids(gone, 'custom_events')).toEqual([]);
  });
});

describe('erasure of the rejected events', () => {
  const workspaceId = `ws_${randomUUID()}`;
  const other = `ws_${randomUUID()}`;
  const rejected = new DynamoRejectedEvents({ ...controlTable, now: () => NOW });
  const sent = new Date(NOW - 10 * MINUTE).toISOString();
  const bus = (ws: string, detailType: string, detail: Row) => ({
    id: randomUUID(),
    source: workspaceSource(ws),
    'detail-type': detailType,
    time: sent,
    detail: { workspaceId: ws, ...detail },
  });
  const custom = (id: string, fields: Row) => ({
    dataset: 'custom_events',
    id,
    event_name: 'order.paid',
    occurred_at: 'yesterday',
    ...fields,
  });
  const kept = async (ws: string) => {
    const all = [];
    for await (const rejection of rejected.list(ws)) all.push(rejection);
    return all;
  };

  it('rewrites the workspace’s rejections without the person’s rows and their reasons, deletes those left empty; --all deletes the rest', async () => {
    // Prepare: Dee's id and address, linked in the subscribers table; rejections holding her rows, in this
    // workspace, in another one, and under `-` (an envelope that named no workspace)
    const subscriber = [...generateSubscribers({ workspaceId, count: 1 })].map((row) => ({
      ...row,
      id: 'sub_dee',
      email: 'dee@example.com',
    }));
    expect((await writerAt(NOW - HOUR).upsertSubscribers(workspaceId, subscriber)).accepted).toBe(1);
    await rejected.put({
      workspaceId,
      kind: 'rows',
      event: bus(workspaceId, 'sluice.events', {
        events: [
          custom('ce_dee', { subscriber_id: 'sub_dee' }),
          custom('ce_eve', { subscriber_id: 'sub_eve' }),
          custom('ce_dee_props', { properties: { email: 'DEE@example.com' } }),
        ],
      }),
      reasons: [
        'events[0]: occurred_at: one',
        'events[1]: occurred_at: two',
        'events[2]: occurred_at: three',
      ],
    });
    await rejected.put({
      workspaceId,
      kind: 'envelope',
      event: bus(workspaceId, 'sluice.subscribers', {
        upsert: [{ id: 'sub_dee', email: 'dee@example.com' }],
      }),
      reasons: ['upsert: refused'],
    });
    const otherEvent = bus(other, 'sluice.events', {
      events: [custom('ce_other', { email: 'dee@example.com' })],
    });
    await rejected.put({ workspaceId: other, kind: 'envelope', event: otherEvent, reasons: ['refused'] });
    const nowhere = {
      ...bus('-', 'sluice.events', { events: [custom('ce_nowhere', { subscriber_id: 'sub_dee' })] }),
      source: 'elsewhere',
      detail: { events: [custom('ce_nowhere', { subscriber_id: 'sub_dee', email: 'dee@example.com' })] },
    };
    await rejected.put({
      workspaceId: '-',
      kind: 'envelope',
      event: nowhere,
      reasons: ['workspaceId: missing'],
    });
    const nowhereKept = async () => (await kept('-')).filter((r) => r.event.id === nowhere.id);

    // Act
    const report = await eraser.erase(workspaceId, { kind: 'email', email: 'Dee@example.com' });

    // Assess: Eve's row stays, with her reason renumbered; the other workspace's and `-` are not touched
    expect(report).toMatchObject({ rejectedRows: 3, rejectedRewritten: 1, rejectedDeleted: 1 });
    const left = await kept(workspaceId);
    expect(left.map((r) => [r.kind, r.event.detail, r.reasons])).toEqual([
      [
        'rows',
        { workspaceId, events: [custom('ce_eve', { subscriber_id: 'sub_eve' })] },
        ['events[0]: occurred_at: two'],
      ],
    ]);
    expect((await kept(other)).map((r) => r.event)).toEqual([otherEvent]);
    expect((await nowhereKept()).map((r) => r.event)).toEqual([nowhere]);

    // Act: `-` reached by its own erasure; then the whole workspace
    await eraser.erase('-', { kind: 'subscriber', subscriberId: 'sub_dee' });
    const all = await eraser.erase(workspaceId, { kind: 'all' });

    // Assess
    expect(await nowhereKept()).toEqual([]);
    expect(all).toMatchObject({ rejectedRows: 1, rejectedRewritten: 0, rejectedDeleted: 1 });
    expect(await kept(workspaceId)).toEqual([]);
    expect(await kept(other)).toHaveLength(1);
  });
});

describe('erasure of current rows (message and project states)', () => {
  const workspaceId = `ws_${randomUUID()}`;
  const store = new CurrentRowStore({ ...eventTables, now: () => NOW });
  const spec = (dataset: string, keyField: string, kind: 'message' | 'project') => ({
    dataset,
    kind,
    keyField,
    parse: (input: unknown) => ({ ok: true as const, row: input as Record<string, unknown> }),
    serialize: (row: Readonly<Record<string, unknown>>) => JSON.stringify(row),
  });

  it('--all deletes every current row of the workspace', async () => {
    await store.ingest(workspaceId, spec('message_events', 'message_id', 'message'), [
      { index: 0, fields: { message_id: 'm1', status: 'sent', contact_id: 'c1' }, recordedMs: NOW },
      { index: 1, fields: { message_id: 'm2', status: 'sent', contact_id: 'c2' }, recordedMs: NOW },
    ]);
    await store.ingest(workspaceId, spec('project_summary', 'project_id', 'project'), [
      { index: 0, fields: { project_id: 'p1', completed_at: new Date(NOW).toISOString() }, recordedMs: NOW },
    ]);
    expect(await store.current(workspaceId, 'message_events', 'm1')).toBeDefined();
    const report = await eraser.erase(workspaceId, { kind: 'all' });
    expect(report.currentRows).toBe(3);
    expect(await store.current(workspaceId, 'message_events', 'm1')).toBeUndefined();
    expect(await store.current(workspaceId, 'project_summary', 'p1')).toBeUndefined();
  });
});

describe("Eraser, the second product's people: by phone number and contact id", () => {
  const at = NOW - 10 * MINUTE;
  const message = (id: string, extra: Record<string, unknown>) => ({
    dataset: 'message_events',
    message_id: id,
    conversation_id: 'cnv_1',
    status: 'delivered',
    media_url_count: 0,
    created_at: at,
    ...extra,
  });
  const rows = [
    // Ada: +15555550101, contact con_ada. The organization's short code 471016 sends to everyone.
    message('msg_a1', {
      direction: 'outbound',
      from_phone_number: '471016',
      to_phone_number: '5555550101',
      contact_id: 'con_ada',
    }),
    message('msg_a2', {
      direction: 'inbound',
      from_phone_number: '+1 555 555 0101',
      to_phone_number: '471016',
    }),
    {
      dataset: 'click_events',
      click_id: 'clk_a',
      tracking_link_id: 'lnk_1',
      message_id: 'msg_a1',
      project_id: 'prj_1',
      contact_id: 'con_ada',
      short_url: 'https://pcms.to/a',
      destination_url: 'https://example.org/',
      clicked_at: at,
      is_unique_click: true,
      is_share_click: false,
    },
    { dataset: 'opt_out_events', opt_out_id: 'opt_a', phone_number: '+15555550101', created_at: at },
    // Grace: +15555550202, contact con_grace: kept.
    message('msg_g1', {
      direction: 'outbound',
      from_phone_number: '471016',
      to_phone_number: '+15555550202',
      contact_id: 'con_grace',
    }),
    { dataset: 'opt_out_events', opt_out_id: 'opt_g', phone_number: '+15555550202', created_at: at },
  ];
  const ids = async (workspaceId: string) => {
    const out: string[] = [];
    for (const dataset of ['message_events', 'click_events', 'opt_out_events'] as const) {
      for await (const page of hot.readWindow(workspaceId, dataset, at - HOUR, NOW)) {
        out.push(...page.lines.map((line) => (JSON.parse(line) as { id: string }).id));
      }
    }
    return out.sort();
  };

  it('erases the rows of a phone number and of the contact ids its messages link, never the sender’s', async () => {
    // Prepare
    const workspaceId = `ws_${randomUUID()}`;
    const ingested = await writerAt(at).ingestEvents(workspaceId, rows);
    expect(ingested.invalid).toEqual([]);

    // Act
    const report = await eraser.erase(workspaceId, { kind: 'phone', phone: '(555) 555-0101' });

    // Assess: Ada's message both ways, her click (linked by contact id) and opt-out; Grace's rows stay
    expect(report.hotRows).toBe(4);
    // …and the current rows of her two messages (a later change of either is refused as unknown).
    expect(report.currentRows).toBe(2);
    expect(await ids(workspaceId)).toEqual(['msg_g1@-', 'opt_g']);
    const [entry] = await erasureLog.erasuresOf(workspaceId);
    expect(entry?.phoneHashes).toEqual([erasureHash(workspaceId, 'phone', '+15555550101')]);
  });

  it('erases the archived rows of a phone number, and leaves them out of a redrive of the dead-letter queue', async () => {
    // Prepare: the rows recorded in the hour H, archived; a bus event of Ada's and Grace's rows sent before the
    // erasure waits in the dead-letter queue.
    const workspaceId = `ws_${randomUUID()}`;
    expect((await writerAt(H + 5 * MINUTE).ingestEvents(workspaceId, rows)).invalid).toEqual([]);
    const compactor = new ArchiveCompactor({
      hot,
      archive,
      cursors: new ArchiveCursorStore(controlTable),
      hotRetentionMs: RETENTION_MS,
      now: () => NOW,
    });
    const datasets = ['message_events', 'click_events', 'opt_out_events'] as const;
    for (const dataset of datasets) await compactor.compactDataset(workspaceId, dataset);
    const archivedIds = async () => {
      const out: string[] = [];
      for (const dataset of datasets)
        out.push(...(await archivedLines(workspaceId, dataset)).map((line) => JSON.parse(line).id as string));
      return out.sort();
    };
    expect(await archivedIds()).toHaveLength(6);
    const optOut = (id: string, phone: string) => ({
      dataset: 'opt_out_events',
      opt_out_id: id,
      phone_number: phone,
      created_at: at,
    });
    const pending = [
      {
        id: 'm0',
        receiptHandle: 'r0',
        body: JSON.stringify({
          requestPayload: {
            id: randomUUID(),
            source: workspaceSource(workspaceId),
            'detail-type': 'sluice.events',
            time: new Date(NOW - MINUTE).toISOString(),
            detail: {
              workspaceId,
              events: [optOut('opt_a_late', '555 555 0101'), optOut('opt_g_late', '+15555550202')],
            },
          },
        }),
      },
    ];
    const queue = {
      receive: async (max: number) => pending.splice(0, max),
      delete: async () => undefined,
    };

    // Act
    const report = await eraser.erase(workspaceId, { kind: 'phone', phone: '+15555550101' });
    const redriveAt = NOW + MINUTE;
    const redriveWriter = new EventLogWriter({
      ...eventTables,
      explicitRecordedAt: 'ignore',
      now: () => redriveAt,
    });
    const summary = await redriveDeadLetters(queue, redriveWriter, new Logger({ logLevel: 'SILENT' }), {
      erasures: erasureLog,
    });

    // Assess
    expect(report.archiveRows).toBe(4);
    expect(await archivedIds()).toEqual(['msg_g1@-', 'opt_g']);
    expect(summary).toMatchObject({ erased: { events: 1 } });
    const redriven: string[] = [];
    for await (const page of hot.readWindow(workspaceId, 'opt_out_events', redriveAt - 1, redriveAt))
      redriven.push(...page.lines.map((line) => JSON.parse(line).id as string));
    expect(redriven).toEqual(['opt_g_late']);
  });

  it('erases by contact id, and the phone numbers its rows link', async () => {
    // Prepare
    const workspaceId = `ws_${randomUUID()}`;
    await writerAt(at).ingestEvents(workspaceId, rows);

    // Act
    const report = await eraser.erase(workspaceId, { kind: 'contact', contactId: 'con_ada' });

    // Assess
    expect(report.hotRows).toBe(4);
    // …and the current rows of her two messages (a later change of either is refused as unknown).
    expect(report.currentRows).toBe(2);
    expect(await ids(workspaceId)).toEqual(['msg_g1@-', 'opt_g']);
    await expect(eraser.erase(workspaceId, { kind: 'phone', phone: 'call me' })).rejects.toThrow(
      'Invalid phone number',
    );
  });
});

describe('erasure by phone number reaches the subscribers (the subscribers snapshot)', () => {
  const at = NOW - 10 * MINUTE;
  const logger = new Logger({ serviceName: 'test', logLevel: 'SILENT' });
  const subscriber = (id: string, email: string, phone: string | null) => ({
    ...[...generateSubscribers({ workspaceId: 'x', count: 1 })][0],
    id,
    email,
    phone,
  });
  const subscriberIds = async (workspaceId: string) => {
    const out: string[] = [];
    for await (const page of hot.readSubscribers(workspaceId)) {
      out.push(...page.lines.map((line) => (JSON.parse(line) as { id: string }).id));
    }
    return out.sort();
  };
  const hotIds = async (workspaceId: string, datasets: readonly EventDataset[]) => {
    const out: string[] = [];
    for (const dataset of datasets) {
      for await (const page of hot.readWindow(workspaceId, dataset, H - 1, NOW)) {
        out.push(...page.lines.map((line) => (JSON.parse(line) as { id: string }).id));
      }
    }
    return out.sort();
  };

  it('removes the subscriber whose phone it is (as spelt there), their events and a redriven upsert of it', async () => {
    // Prepare: Ada's number is on her subscriber row as a person typed it; Grace keeps hers.
    const workspaceId = `ws_${randomUUID()}`;
    const writer = writerAt(at);
    const people = [
      subscriber('sub_ada', 'ada@example.com', '(555) 555-0101'),
      subscriber('sub_grace', 'grace@example.com', '+15555550202'),
    ];
    expect((await writer.upsertSubscribers(workspaceId, people)).invalid).toEqual([]);
    const events = [
      ...rows('email_events', 2, 41, { subscriber_id: 'sub_ada', email: 'ada@example.com' }),
      ...rows('sms_events', 1, 42, { subscriber_id: 'sub_ada' }),
      ...rows('email_events', 1, 43, { subscriber_id: 'sub_grace', email: 'grace@example.com' }),
      { dataset: 'opt_out_events', opt_out_id: 'opt_ada', phone_number: '+15555550101', created_at: at },
    ];
    expect((await writerAt(H).ingestEvents(workspaceId, events)).invalid).toEqual([]);

    // Act
    const report = await eraser.erase(workspaceId, { kind: 'phone', phone: '+15555550101' });
    const queue = {
      deleted: [] as string[],
      pending: [
        {
          id: 'm0',
          receiptHandle: 'r0',
          body: JSON.stringify({
            requestPayload: {
              id: randomUUID(),
              source: workspaceSource(workspaceId),
              'detail-type': 'sluice.subscribers',
              time: new Date(NOW - MINUTE).toISOString(),
              detail: {
                workspaceId,
                upsert: [subscriber('sub_ada_new', 'ada.new@example.com', '555.555.0101')],
              },
            },
          }),
        },
      ],
      receive: async (max: number) => queue.pending.splice(0, max),
      delete: async (l: { id: string }) => void queue.deleted.push(l.id),
    };
    const redriveWriter = new EventLogWriter({
      ...eventTables,
      explicitRecordedAt: 'ignore',
      now: () => NOW,
    });
    const summary = await redriveDeadLetters(queue, redriveWriter, logger, { erasures: erasureLog });

    // Assess: Ada's subscriber row, her email and SMS events (by the id it links) and her opt-out are gone.
    expect(report.subscribers).toBe(1);
    expect(await subscriberIds(workspaceId)).toEqual(['sub_grace']);
    expect(await hotIds(workspaceId, ['email_events', 'sms_events', 'opt_out_events'])).toEqual(['evt_43_0']);
    const [entry] = await erasureLog.erasuresOf(workspaceId).then((entries) => entries.slice(-1));
    expect(entry?.subscriberIdHashes).toContain(erasureHash(workspaceId, 'subscriber', 'sub_ada'));
    // The dead-letter queue: an upsert of a subscriber with her number (another spelling) is left out.
    expect(summary).toMatchObject({ erased: { subscribers: 1 } });
    expect(await subscriberIds(workspaceId)).toEqual(['sub_grace']);
  });

  it('by e-mail, also removes the rows of the phone number on the subscriber’s row', async () => {
    // Prepare
    const workspaceId = `ws_${randomUUID()}`;
    const people = [subscriber('sub_ada', 'ada@example.com', '555-555-0101')];
    expect((await writerAt(at).upsertSubscribers(workspaceId, people)).invalid).toEqual([]);
    const optOuts = [
      { dataset: 'opt_out_events', opt_out_id: 'opt_ada', phone_number: '+15555550101', created_at: at },
      { dataset: 'opt_out_events', opt_out_id: 'opt_grace', phone_number: '+15555550202', created_at: at },
    ];
    expect((await writerAt(H).ingestEvents(workspaceId, optOuts)).invalid).toEqual([]);

    // Act
    await eraser.erase(workspaceId, { kind: 'email', email: 'ADA@example.com' });

    // Assess
    expect(await hotIds(workspaceId, ['opt_out_events'])).toEqual(['opt_grace']);
    const [entry] = await erasureLog.erasuresOf(workspaceId);
    expect(entry?.phoneHashes).toEqual([erasureHash(workspaceId, 'phone', '+15555550101')]);
  });

  it('never takes a subscriber for another by a phone that is not a number', async () => {
    // Prepare
    const workspaceId = `ws_${randomUUID()}`;
    const people = [subscriber('sub_a', 'a@example.com', 'n/a'), subscriber('sub_b', 'b@example.com', 'n/a')];
    expect((await writerAt(at).upsertSubscribers(workspaceId, people)).invalid).toEqual([]);

    // Act
    const report = await eraser.erase(workspaceId, { kind: 'email', email: 'a@example.com' });

    // Assess
    expect(report.subscribers).toBe(1);
    expect(await subscriberIds(workspaceId)).toEqual(['sub_b']);
  });
});

describe('erasure and the per-row marker', () => {
  it('erases a per-row item written before the switch, and queries no per-row partition of an hour after the marker', async () => {
    const workspaceId = `ws_${randomUUID()}`;
    // A custom event as the event log stored it before segments: one item, in its shard's partition.
    const recordedMs = H + MINUTE;
    const legacy = {
      ...rows('custom_events', 1, 30, { subscriber_id: 'sub_legacy' })[0],
      id: 'evt_legacy',
      recorded_at: new Date(recordedMs).toISOString(),
    };
    await dynamo.send(
      new PutItemCommand({
        TableName: eventTables.eventsTable,
        Item: {
          PK: {
            S: eventPk(workspaceId, 'custom_events', hourStart(recordedMs), shardOf(legacy.id, EVENT_SHARDS)),
          },
          SK: { S: eventSk(recordedMs, legacy.id) },
          line: { S: JSON.stringify(legacy) },
          expiresAt: { N: String(Math.floor(recordedMs / 1000) + 7 * 86_400) },
        },
      }),
    );
    // The first write of a version without per-row items, two hours before H: the marker is H + 23 h.
    expect(
      (await writerAt(H - 2 * HOUR).ingestEvents(workspaceId, rows('custom_events', 2, 31))).invalid,
    ).toEqual([]);
    const shardHours: number[] = [];
    // A real client (the Eraser takes no other) that notes the hour of each per-row partition it queries.
    const counting = new DynamoDBClient({});
    counting.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { ExpressionAttributeValues?: Record<string, { S?: string }> };
        const match = /#(\d{4}-\d{2}-\d{2}T\d{2})#\d+$/.exec(
          input.ExpressionAttributeValues?.[':pk']?.S ?? '',
        );
        if (context.commandName === 'QueryCommand' && match !== null)
          shardHours.push(Date.parse(`${match[1]}:00:00Z`));
        return next(args);
      },
      { step: 'initialize' },
    );
    const counted = new Eraser({
      client: counting,
      ...eventTables,
      archive,
      erasureLog,
      rejected: new DynamoRejectedEvents(controlTable),
      hotRetentionMs: RETENTION_MS,
      now: () => NOW,
    });
    const report = await counted.erase(workspaceId, { kind: 'subscriber', subscriberId: 'sub_legacy' });
    expect(report.hotRows).toBe(1);
    expect(await hotLines(workspaceId, 'custom_events', H - 1, H + HOUR)).toHaveLength(2);
    // Shards searched from the retention's start to the marker's hour, none of the two hours after it.
    expect(shardHours).toContain(H);
    expect(Math.max(...shardHours)).toBe(H + 23 * HOUR);
  });
});
