import { randomUUID } from 'node:crypto';
import { type DynamoDBClient, QueryCommand } from '@aws-sdk/client-dynamodb';
import { Logger } from '@aws-lambda-powertools/logger';
import { describe, expect, it } from 'vitest';
import { defaultEventLogClient } from './client.js';
import { EventLogWriter } from './ingest.js';
import { EVENT_SHARDS, shardOf } from './keys.js';
import { ingestCustomEvents, writePerRowItems } from './event-log.test-support.js';
import { DEFAULT_PAGE_LIMIT, EventLogReader, SEGMENT_PAGE_LIMIT } from './reader.js';
import { eventTables } from '../../../test/helpers/tables.js';

const MIDNIGHT = Date.parse('2026-10-01T00:00:00.000Z');
const HOUR = 3_600_000;
const logger = new Logger({ serviceName: 'test', logLevel: 'SILENT' });
/** The writers' clock; readers read at the same time, since the fixed dates are further back than the retention. */
const writtenAt = () => MIDNIGHT + 10 * HOUR;

interface Written {
  id: string;
  recordedMs: number;
}

/** Writes custom events at explicit recorded times; returns them sorted as the reader must return them. */
async function seed(workspaceId: string, events: Written[]): Promise<Written[]> {
  await ingestCustomEvents(workspaceId, events, MIDNIGHT + 10 * HOUR);
  return [...events].sort((a, b) => a.recordedMs - b.recordedMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

async function read(reader: EventLogReader, workspaceId: string, fromMs: number, toMs: number) {
  const pages: string[][] = [];
  for await (const page of reader.readWindow(workspaceId, 'custom_events', fromMs, toMs))
    pages.push(page.lines);
  const rows = pages.flat().map((line) => JSON.parse(line) as { id: string; recorded_at: string });
  return { pages, ids: rows.map((row) => row.id), rows };
}

/** The real client, counting its calls. */
function countingClient() {
  const real = defaultEventLogClient();
  const counter = { calls: 0, limits: [] as (number | undefined)[] };
  const client = {
    send: (command: Parameters<DynamoDBClient['send']>[0]) => {
      // The Queries only (not the per-row marker's GetItem).
      if (!(command instanceof QueryCommand)) return real.send(command);
      counter.calls++;
      counter.limits.push((command.input as { Limit?: number }).Limit);
      return real.send(command);
    },
  } as unknown as DynamoDBClient;
  return { client, counter };
}

describe('EventLogReader.readWindow', () => {
  it('merges shards in recorded-time order across hours and a UTC midnight, ties broken by id', async () => {
    // Prepare: 200 events over 22:00..02:00 around a midnight, in 20 distinct milliseconds, so that many share
    // a millisecond and every shard holds some.
    const workspaceId = `ws_${randomUUID()}`;
    const events: Written[] = Array.from({ length: 200 }, (_, i) => ({
      id: `ev_${((i * 7919) % 1000).toString(36)}_${i}`,
      recordedMs: MIDNIGHT - 2 * HOUR + (i % 20) * 12 * 60_000 + (i % 3),
    }));
    const expected = await seed(workspaceId, events);
    expect(new Set(events.map((e) => shardOf(e.id, EVENT_SHARDS))).size).toBe(EVENT_SHARDS);

    // Act: small Query pages and output pages, so every partition takes several pages.
    const { pages, ids, rows } = await read(
      new EventLogReader({ ...eventTables, pageLimit: 3, batchSize: 17, now: writtenAt }),
      workspaceId,
      MIDNIGHT - 3 * HOUR,
      MIDNIGHT + 3 * HOUR,
    );

    // Assess
    expect(ids).toEqual(expected.map((e) => e.id));
    expect(rows.map((row) => Date.parse(row.recorded_at))).toEqual(expected.map((e) => e.recordedMs));
    expect(pages.slice(0, -1).every((page) => page.length === 17)).toBe(true);
  });

  it('reads (fromMs, toMs]: fromMs exclusive, toMs inclusive, also at an hour boundary', async () => {
    const workspaceId = `ws_${randomUUID()}`;
    const t = MIDNIGHT + 5 * HOUR;
    await seed(workspaceId, [
      { id: 'before', recordedMs: t - 1 },
      { id: 'at_from', recordedMs: t },
      { id: 'inside', recordedMs: t + 1 },
      { id: 'at_to', recordedMs: t + HOUR },
      { id: 'after', recordedMs: t + HOUR + 1 },
    ]);
    const reader = new EventLogReader({ ...eventTables, now: writtenAt });

    expect((await read(reader, workspaceId, t, t + HOUR)).ids).toEqual(['inside', 'at_to']);
    expect((await read(reader, workspaceId, t - 1, t)).ids).toEqual(['at_from']);
    expect((await read(reader, workspaceId, t + HOUR, t + HOUR)).ids).toEqual([]);
    expect((await read(reader, workspaceId, t + 2, t + HOUR - 1)).ids).toEqual([]);
    expect(await reader.countWindow(workspaceId, 'custom_events', t - 2, t + HOUR + 1)).toBe(5);
  });

  it('resumes after a position, and reads a whole window when the position lies at or before its start', async () => {
    // Prepare: a window whose start moved after a writer stopped in it (rows that expired are left out)
    const workspaceId = `ws_${randomUUID()}`;
    const t = MIDNIGHT + 7 * HOUR;
    await seed(workspaceId, [
      { id: 'a', recordedMs: t + 1 },
      { id: 'b', recordedMs: t + 2 },
      { id: 'c', recordedMs: t + 3 },
    ]);
    const reader = new EventLogReader({ ...eventTables, now: writtenAt });
    const after = async (fromMs: number, afterKey: string) => {
      const ids: string[] = [];
      for await (const page of reader.readWindow(workspaceId, 'custom_events', fromMs, t + HOUR, afterKey))
        ids.push(...page.lines.map((line) => (JSON.parse(line) as { id: string }).id));
      return ids;
    };
    const positionOf = (ms: number, id: string) => `${String(ms).padStart(13, '0')}#${id}`;

    // Act and assess
    expect(await after(t, positionOf(t + 1, 'a'))).toEqual(['b', 'c']);
    expect(await after(t + 2, positionOf(t + 1, 'a'))).toEqual(['c']);
    expect(await after(t + 1, positionOf(t + 1, 'a'))).toEqual(['b', 'c']);
    await expect(after(t, positionOf(t + HOUR + 1, 'z'))).rejects.toThrow(/not inside the window/);
  });

  it('streams a partition larger than one 1 MB DynamoDB page', async () => {
    // Prepare: 2,400 rows of about 2 KB in one hour: about 1.2 MB per shard, over Query's 1 MB page.
    const workspaceId = `ws_${randomUUID()}`;
    const padding = 'x'.repeat(2_000);
    const inputs = Array.from({ length: 2_400 }, (_, i) => ({
      id: `big_${String(i).padStart(4, '0')}`,
      recordedMs: MIDNIGHT - 10 * HOUR + i,
      padding,
    }));
    // Per-row items, as written before segments (segments of these rows compress to a few KB).
    await writePerRowItems(workspaceId, inputs);
    const { client, counter } = countingClient();

    // Act
    const { ids } = await read(
      new EventLogReader({ ...eventTables, client, now: writtenAt }),
      workspaceId,
      MIDNIGHT - 11 * HOUR,
      MIDNIGHT,
    );

    // Assess: every row once, in order, and more than one Query page for some shard (more calls than the
    // 11 hours x 4 shards of single pages), each page asked for at most DEFAULT_PAGE_LIMIT items (without a
    // Limit, DynamoDB Local builds the rest of the partition for every page).
    expect(ids).toEqual(inputs.map((input) => input.id));
    expect(counter.calls).toBeGreaterThan(11 * EVENT_SHARDS);
    expect(new Set(counter.limits)).toEqual(new Set([DEFAULT_PAGE_LIMIT, SEGMENT_PAGE_LIMIT]));
  });

  it('yields nothing for an empty or inverted window and keeps workspaces apart', async () => {
    const workspaceId = `ws_${randomUUID()}`;
    await seed(workspaceId, [{ id: 'mine', recordedMs: MIDNIGHT + HOUR }]);
    const reader = new EventLogReader({ ...eventTables, now: writtenAt });
    expect((await read(reader, `ws_${randomUUID()}`, MIDNIGHT, MIDNIGHT + 2 * HOUR)).pages).toEqual([]);
    expect((await read(reader, workspaceId, MIDNIGHT + 2 * HOUR, MIDNIGHT)).pages).toEqual([]);
    const other = reader.readWindow(workspaceId, 'email_events', MIDNIGHT, MIDNIGHT + 2 * HOUR);
    for await (const _page of other) throw new Error('email_events must be empty');
  });
});

describe('EventLogReader.hasRowsAfter', () => {
  it('answers for (afterMs, untilMs] and stops at the first hour with a row', async () => {
    const workspaceId = `ws_${randomUUID()}`;
    const t = MIDNIGHT + 30 * 60_000;
    await seed(workspaceId, [{ id: 'only', recordedMs: t }]);
    const { client, counter } = countingClient();
    const reader = new EventLogReader({ ...eventTables, client, now: writtenAt });

    expect(await reader.hasRowsAfter(workspaceId, 'custom_events', t - 1, t)).toBe(true);
    expect(await reader.hasRowsAfter(workspaceId, 'custom_events', t, t + HOUR)).toBe(false);
    expect(await reader.hasRowsAfter(workspaceId, 'custom_events', t - HOUR, t - 1)).toBe(false);
    expect(await reader.hasRowsAfter(workspaceId, 'email_events', t - 1, t)).toBe(false);
    expect(await reader.hasRowsAfter(workspaceId, 'custom_events', t, t)).toBe(false);

    // A 7-day span with the row in its first hour: one round of 6 hours x (4 shards and the segments), then stop.
    counter.calls = 0;
    expect(await reader.hasRowsAfter(workspaceId, 'custom_events', MIDNIGHT, MIDNIGHT + 7 * 24 * HOUR)).toBe(
      true,
    );
    expect(counter.calls).toBe(6 * (EVENT_SHARDS + 1));
  });
});

describe('EventLogReader and expired rows', () => {
  // A retention of two minutes: rows written at T0 have expired at T0 + 3 min, DynamoDB Local keeps them.
  const RETENTION_SECONDS = 120;
  const T0 = Date.parse('2026-10-02T05:10:00.000Z');
  const LIVE_AT = T0 + 3 * 60_000;
  const READ_AT = LIVE_AT + 10_000;

  /** 300 rows recorded at T0 and one at LIVE_AT, all in one hour partition. */
  async function seedExpiring(workspaceId: string): Promise<void> {
    const row = (id: string) => ({ dataset: 'custom_events', id, event_name: 'e', occurred_at: T0 - 1 });
    const old = new EventLogWriter({
      ...eventTables,
      now: () => T0,
      retentionSeconds: RETENTION_SECONDS,
      logger,
      explicitRecordedAt: 'ignore',
    });
    const live = new EventLogWriter({
      ...eventTables,
      now: () => LIVE_AT,
      retentionSeconds: RETENTION_SECONDS,
      logger,
      explicitRecordedAt: 'ignore',
    });
    const oldRows = Array.from({ length: 300 }, (_, i) => row(`old_${String(i).padStart(3, '0')}`));
    expect((await old.ingestEvents(workspaceId, oldRows)).accepted).toBe(300);
    expect((await live.ingestEvents(workspaceId, [row('live')])).accepted).toBe(1);
  }

  it('leaves expired rows out of readWindow and countWindow, following pages the filter emptied', async () => {
    // Prepare
    const workspaceId = `ws_${randomUUID()}`;
    await seedExpiring(workspaceId);
    const before = new EventLogReader({ ...eventTables, now: () => T0, pageLimit: 3 });
    const after = new EventLogReader({ ...eventTables, now: () => READ_AT, pageLimit: 3 });

    // Act
    const allRows = await read(before, workspaceId, T0 - 1, READ_AT);
    const liveRows = await read(after, workspaceId, T0 - 1, READ_AT);

    // Assess
    expect(allRows.ids).toHaveLength(301);
    expect(liveRows.ids).toEqual(['live']);
    expect(await before.countWindow(workspaceId, 'custom_events', T0 - 1, READ_AT)).toBe(301);
    expect(await after.countWindow(workspaceId, 'custom_events', T0 - 1, READ_AT)).toBe(1);
    expect(await after.countWindow(workspaceId, 'custom_events', T0 - 1, T0)).toBe(0);
  });

  it('finds a live row behind a long expired stretch in hasRowsAfter, in a few growing pages', async () => {
    // Prepare
    const workspaceId = `ws_${randomUUID()}`;
    await seedExpiring(workspaceId);
    const { client, counter } = countingClient();
    const reader = new EventLogReader({ ...eventTables, client, now: () => READ_AT });

    // Act
    const onlyExpired = await reader.hasRowsAfter(workspaceId, 'custom_events', T0 - 1, T0);
    const expiredCalls = counter.calls;
    counter.calls = 0;
    const expiredThenLive = await reader.hasRowsAfter(workspaceId, 'custom_events', T0 - 1, READ_AT);

    // Assess: about 75 expired rows a shard are read in pages of 1, 10 and 100, not one Query per row.
    expect(onlyExpired).toBe(false);
    expect(expiredThenLive).toBe(true);
    expect(expiredCalls).toBeLessThanOrEqual(3 * EVENT_SHARDS);
    expect(counter.calls).toBeLessThanOrEqual(3 * EVENT_SHARDS);
    expect(
      await new EventLogReader({ ...eventTables, now: () => T0 }).hasRowsAfter(
        workspaceId,
        'custom_events',
        T0 - 1,
        T0,
      ),
    ).toBe(true);
  });
});

describe('EventLogReader with a failing store', () => {
  /** A fake store: the first Query of every partition returns one item and a next key; the next ones fail. */
  function failingClient() {
    const failure = Object.assign(new Error('store down'), { name: 'InternalServerError' });
    return {
      send: async (command: {
        input: { ExclusiveStartKey?: unknown; ExpressionAttributeValues?: Record<string, { S?: string }> };
      }) => {
        if (command.input.ExclusiveStartKey) throw failure;
        const pk = command.input.ExpressionAttributeValues?.[':pk']?.S ?? '';
        if (pk.endsWith('#seg')) return { Items: [] };
        const sk = `${command.input.ExpressionAttributeValues?.[':lo']?.S}#${pk.slice(-1)}`;
        return {
          Items: [{ SK: { S: sk }, line: { S: `{"id":"${pk}"}` } }],
          LastEvaluatedKey: { PK: { S: pk } },
        };
      },
    } as unknown as DynamoDBClient;
  }

  it('passes a failed page to the consumer', async () => {
    const reader = new EventLogReader({
      client: failingClient(),
      eventsTable: 't',
      subscribersTable: 's',
      batchSize: 1,
    });
    const read = async () => {
      for await (const _page of reader.readWindow('ws', 'custom_events', MIDNIGHT, MIDNIGHT + HOUR)) {
        // consume
      }
    };
    await expect(read()).rejects.toThrow('store down');
  });

  it('leaves no unhandled rejection when the consumer stops early', async () => {
    const reader = new EventLogReader({
      client: failingClient(),
      eventsTable: 't',
      subscribersTable: 's',
      batchSize: 1,
    });
    const pages: string[][] = [];
    for await (const page of reader.readWindow('ws', 'custom_events', MIDNIGHT, MIDNIGHT + 3 * HOUR)) {
      pages.push(page.lines);
      break;
    }
    // Let the prefetched pages settle (and fail) after the consumer left.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(pages).toHaveLength(1);
  });
});
