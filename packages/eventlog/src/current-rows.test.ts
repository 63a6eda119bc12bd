import { randomUUID } from 'node:crypto';
import {
  type CurrentRow,
  describeIssues,
  type EventDataset,
  type ParseCurrentRow,
  timestamp,
} from '@sluice/core';
import { QueryCommand, TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { eventTables } from '../../../test/helpers/tables.js';
import { defaultEventLogClient } from './client.js';
import { CurrentRowStore, type CurrentRowSpec } from './current-rows.js';
import { EVENT_SHARDS, eventPk, hourStart } from './keys.js';
import { EventLogReader } from './reader.js';
import { segmentPk } from './segments.js';

const NOW = Date.parse('2026-09-30T12:00:00.000Z');
const HOUR = 3_600_000;

/** A stand-in for the catalogue's schemas: the store takes any. */
function parserOf(schema: z.ZodType<Record<string, unknown>>): ParseCurrentRow {
  return (input) => {
    const result = schema.safeParse(input);
    return result.success
      ? { ok: true, row: result.data }
      : { ok: false, reason: describeIssues(result.error.issues) };
  };
}
const nullable = <T extends z.ZodType>(type: T) => type.nullish().transform((v) => v ?? null);
const messages: CurrentRowSpec = {
  dataset: 'message_events',
  kind: 'message',
  keyField: 'message_id',
  parse: parserOf(
    z.object({
      message_id: z.string(),
      status: z.string(),
      to_phone_number: z.string(),
      contact_id: nullable(z.string()),
      url_click_count: nullable(z.number().int()),
      updated_at: nullable(timestamp),
    }),
  ),
  serialize: (row) => JSON.stringify(row),
};
const projects: CurrentRowSpec = {
  dataset: 'project_summary',
  kind: 'project',
  keyField: 'project_id',
  parse: parserOf(z.object({ project_id: z.string(), name: z.string(), completed_at: nullable(timestamp) })),
  serialize: (row) => JSON.stringify(row),
};

function setup() {
  const store = new CurrentRowStore({ ...eventTables, now: () => NOW });
  const reader = new EventLogReader({ ...eventTables, now: () => NOW });
  return { store, reader, workspaceId: `ws_${randomUUID()}` };
}

async function emitted(reader: EventLogReader, workspaceId: string, dataset: string) {
  const rows: { recordedMs: number; row: CurrentRow }[] = [];
  for await (const page of reader.readWindow(
    workspaceId,
    dataset as EventDataset,
    NOW - 10 * HOUR,
    NOW + HOUR,
  )) {
    for (const [i, line] of page.lines.entries()) {
      rows.push({ recordedMs: page.recordedMs[i] as number, row: JSON.parse(line) });
    }
  }
  return rows;
}

const iso = (ms: number) => new Date(ms).toISOString();
const input = (index: number, fields: Record<string, unknown>, recordedMs = NOW) => ({
  index,
  fields,
  recordedMs,
});
const message = (id: string, extra: Record<string, unknown> = {}) => ({
  message_id: id,
  status: 'queued',
  to_phone_number: '+15555550123',
  contact_id: 'c1',
  updated_at: iso(NOW - HOUR),
  ...extra,
});

describe('CurrentRowStore, message_events (DynamoDB Local)', () => {
  it('emits a new message and each status change; keeps other changes for the next status change', async () => {
    const { store, reader, workspaceId } = setup();
    const first = await store.ingest(workspaceId, messages, [input(0, message('m1'), NOW - 5 * HOUR)]);
    expect(first).toEqual({
      counts: { emitted: 1, kept: 0, outOfOrder: 0, notComplete: 0, afterCompletion: 0 },
      refused: [],
    });
    const second = await store.ingest(workspaceId, messages, [
      input(0, { message_id: 'm1', url_click_count: 3, updated_at: iso(NOW - 50 * 60_000) }, NOW - 4 * HOUR),
      input(1, { message_id: 'm1', status: 'delivered', updated_at: iso(NOW - 40 * 60_000) }, NOW - 3 * HOUR),
    ]);
    expect(second.counts).toMatchObject({ emitted: 1, kept: 1 });
    const rows = await emitted(reader, workspaceId, 'message_events');
    expect(rows).toEqual([
      { recordedMs: NOW - 5 * HOUR, row: message('m1', { url_click_count: null }) },
      {
        recordedMs: NOW - 3 * HOUR,
        row: message('m1', { status: 'delivered', url_click_count: 3, updated_at: iso(NOW - 40 * 60_000) }),
      },
    ]);
    expect(await store.current(workspaceId, 'message_events', 'm1')).toEqual(rows[1]?.row);
  });

  it('ignores and counts changes that are not newer; refuses a change for an unknown message', async () => {
    const { store, reader, workspaceId } = setup();
    await store.ingest(workspaceId, messages, [input(0, message('m1', { updated_at: iso(NOW - HOUR) }))]);
    const outcome = await store.ingest(workspaceId, messages, [
      input(0, { message_id: 'm1', status: 'failed', updated_at: iso(NOW - HOUR) }),
      input(1, { message_id: 'm1', status: 'failed', updated_at: iso(NOW - 2 * HOUR) }),
      input(2, { message_id: 'm2', status: 'failed', updated_at: iso(NOW) }),
      input(3, { message_id: 'm1', status: 'sent' }),
      input(4, { message_id: 'has space', status: 'sent' }),
    ]);
    expect(outcome.counts).toMatchObject({ emitted: 0, kept: 0, outOfOrder: 2 });
    expect(outcome.refused.map((entry) => entry.index)).toEqual([2, 3, 4]);
    expect(outcome.refused[0]?.reason).toMatch(/message_id: no message with this id was received/);
    expect(outcome.refused[1]?.reason).toBe('updated_at: required on a change to a message');
    expect(await emitted(reader, workspaceId, 'message_events')).toHaveLength(1);
    expect((await store.current(workspaceId, 'message_events', 'm1'))?.status).toBe('queued');
  });

  it('keeps the newest state when ingests race on one message (conditional writes)', async () => {
    const { workspaceId } = setup();
    const stores = Array.from({ length: 6 }, () => new CurrentRowStore({ ...eventTables, now: () => NOW }));
    await stores[0]?.ingest(workspaceId, messages, [
      input(0, message('m1', { updated_at: iso(NOW - 2 * HOUR) })),
    ]);
    const statuses = ['sent', 'delivered', 'failed'];
    const changes = Array.from({ length: 30 }, (_, i) => ({
      message_id: 'm1',
      status: statuses[i % 3],
      url_click_count: i,
      updated_at: iso(NOW - HOUR + i * 1000),
    }));
    // Every change in its own call, all at once, in a shuffled order, over six writers.
    const order = changes.map((_, i) => i).sort((a, b) => ((a * 7919) % 31) - ((b * 7919) % 31));
    const outcomes = await Promise.all(
      order.map((i, n) =>
        stores[n % stores.length]?.ingest(workspaceId, messages, [input(0, changes[i] ?? {})]),
      ),
    );
    const last = changes[29];
    expect(await stores[0]?.current(workspaceId, 'message_events', 'm1')).toMatchObject({
      status: last?.status,
      url_click_count: 29,
      updated_at: last?.updated_at,
    });
    const total = (name: 'emitted' | 'kept' | 'outOfOrder') =>
      outcomes.reduce((sum, outcome) => sum + (outcome?.counts[name] ?? 0), 0);
    expect(total('emitted') + total('kept') + total('outOfOrder')).toBe(30);
  });

  it('erases the states whose current row is the person’s', async () => {
    const { store, workspaceId } = setup();
    await store.ingest(workspaceId, messages, [
      input(0, message('m1', { contact_id: 'c1' })),
      input(1, message('m2', { contact_id: 'c2' })),
      input(2, message('m3', { contact_id: 'c1' })),
    ]);
    expect(await store.erase(workspaceId, 'message_events', (row) => row.contact_id === 'c1')).toBe(2);
    expect(await store.current(workspaceId, 'message_events', 'm1')).toBeUndefined();
    expect(await store.current(workspaceId, 'message_events', 'm3')).toBeUndefined();
    expect(await store.current(workspaceId, 'message_events', 'm2')).toMatchObject({ contact_id: 'c2' });
    // A change for an erased message is refused like any unknown one.
    const after = await store.ingest(workspaceId, messages, [
      input(0, { message_id: 'm1', status: 'sent', updated_at: iso(NOW) }),
    ]);
    expect(after.refused).toHaveLength(1);
  });

  it('forgets a message whose state expired (its last change is older than the retention)', async () => {
    const { workspaceId } = setup();
    const writer = new CurrentRowStore({ ...eventTables, now: () => NOW, retentionSeconds: 3600 });
    await writer.ingest(workspaceId, messages, [input(0, message('m1'), NOW - 2 * HOUR)]);
    expect(await writer.current(workspaceId, 'message_events', 'm1')).toBeUndefined();
    const again = await writer.ingest(workspaceId, messages, [input(0, message('m1'))]);
    expect(again.counts.emitted).toBe(1);
  });
});

/** The items of one partition of the events table (consistent). */
async function partition(pk: string) {
  const output = await defaultEventLogClient().send(
    new QueryCommand({
      TableName: eventTables.eventsTable,
      KeyConditionExpression: 'PK = :pk',
      ExpressionAttributeValues: { ':pk': { S: pk } },
      ConsistentRead: true,
    }),
  );
  return output.Items ?? [];
}

describe('CurrentRowStore, emitted rows in segments (DynamoDB Local)', () => {
  it('stores the rows of many messages in segments written with their states, none as per-row items', async () => {
    const { store, reader, workspaceId } = setup();
    const ids = Array.from({ length: 40 }, (_, i) => `m${String(i).padStart(2, '0')}`);
    const outcome = await store.ingest(
      workspaceId,
      messages,
      ids.map((id, i) => input(i, message(id))),
    );
    expect(outcome.counts.emitted).toBe(40);
    const hourMs = hourStart(NOW);
    const segments = await partition(segmentPk(workspaceId, 'message_events', hourMs));
    // 40 keys: one transaction of 32 states and one segment, one of 8 and one segment.
    expect(segments.map((item) => Number(item.count?.N)).sort((a, b) => a - b)).toEqual([8, 32]);
    for (let shard = 0; shard < EVENT_SHARDS; shard++) {
      expect(await partition(eventPk(workspaceId, 'message_events', hourMs, shard))).toEqual([]);
    }
    expect((await emitted(reader, workspaceId, 'message_events')).map((r) => r.row.message_id)).toEqual(ids);
  });

  it('a write that lost a race stores neither its states nor its segment; a call retried after a lost answer emits nothing twice', async () => {
    const { reader, workspaceId } = setup();
    const real = defaultEventLogClient();
    const other = new CurrentRowStore({ ...eventTables, now: () => NOW });
    await other.ingest(workspaceId, messages, [input(0, message('a')), input(1, message('b'))]);
    let transactions = 0;
    let loseAnswer = false;
    const client = {
      send: async (command: never) => {
        if ((command as object) instanceof TransactWriteItemsCommand) {
          transactions += 1;
          // The first transaction: another writer changes message b between the read and the write.
          if (transactions === 1) {
            await other.ingest(workspaceId, messages, [
              input(0, { message_id: 'b', status: 'sent', updated_at: iso(NOW - 30 * 60_000) }),
            ]);
          }
          const output = await real.send(command);
          if (loseAnswer) throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError' });
          return output;
        }
        return real.send(command);
      },
    } as unknown as typeof real;
    const store = new CurrentRowStore({ ...eventTables, client, now: () => NOW });
    const changes = [
      input(0, { message_id: 'a', status: 'delivered', updated_at: iso(NOW - 20 * 60_000) }),
      input(1, { message_id: 'b', status: 'delivered', updated_at: iso(NOW - 20 * 60_000) }),
      input(2, message('c')),
    ];
    expect((await store.ingest(workspaceId, messages, changes)).counts.emitted).toBe(3);
    expect(transactions).toBe(2);
    // The same call again, its answer lost after the write: the retry finds every change applied.
    loseAnswer = true;
    await expect(store.ingest(workspaceId, messages, [input(0, message('d'))])).rejects.toThrow(/hang up/);
    loseAnswer = false;
    const retried = await store.ingest(workspaceId, messages, [...changes, input(3, message('d'))]);
    expect(retried.counts).toMatchObject({ emitted: 0, outOfOrder: 4 });
    expect(retried.refused).toEqual([]);
    const rows = await emitted(reader, workspaceId, 'message_events');
    expect(rows.map((r) => `${r.row.message_id}:${r.row.status}`).sort()).toEqual([
      'a:delivered',
      'a:queued',
      'b:delivered',
      'b:queued',
      'b:sent',
      'c:queued',
      'd:queued',
    ]);
  });
});

describe('CurrentRowStore, project_summary (DynamoDB Local)', () => {
  it('emits a project once, when it is first received complete', async () => {
    const { store, reader, workspaceId } = setup();
    const project = { project_id: 'p1', name: 'GOTV' };
    const outcome = await store.ingest(workspaceId, projects, [
      input(0, { ...project, completed_at: null }, NOW - 3 * HOUR),
      input(1, { ...project, completed_at: iso(NOW - 2 * HOUR) }, NOW - 2 * HOUR),
      input(2, { ...project, name: 'GOTV 2', completed_at: iso(NOW - 2 * HOUR) }, NOW - HOUR),
      input(3, { project_id: 'p2' }),
    ]);
    expect(outcome.counts).toEqual({
      emitted: 1,
      kept: 0,
      outOfOrder: 0,
      notComplete: 1,
      afterCompletion: 1,
    });
    expect(outcome.refused.map((entry) => entry.index)).toEqual([3]);
    // Concurrent ingests of another completed project: one emission.
    const stores = Array.from({ length: 5 }, () => new CurrentRowStore({ ...eventTables, now: () => NOW }));
    const racing = await Promise.all(
      stores.map((s, i) =>
        s.ingest(workspaceId, projects, [
          input(0, { project_id: 'p3', name: `n${i}`, completed_at: iso(NOW) }),
        ]),
      ),
    );
    expect(racing.reduce((sum, o) => sum + o.counts.emitted, 0)).toBe(1);
    expect(racing.reduce((sum, o) => sum + o.counts.afterCompletion, 0)).toBe(4);
    const rows = await emitted(reader, workspaceId, 'project_summary');
    expect(rows.map((entry) => entry.row.project_id)).toEqual(['p1', 'p3']);
    expect(rows[0]).toEqual({
      recordedMs: NOW - 2 * HOUR,
      row: { ...project, completed_at: iso(NOW - 2 * HOUR) },
    });
  });
});
