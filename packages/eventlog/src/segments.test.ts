import { randomUUID } from 'node:crypto';
import { type DynamoDBClient, PutItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { eventTables } from '../../../test/helpers/tables.js';
import { defaultEventLogClient } from './client.js';
import { MAX_RECORDED_AHEAD_MS } from './ingest.js';
import { eventSk, HOUR_MS } from './keys.js';
import { PER_ROW_UNTIL_MARGIN_MS, readPerRowUntil } from './per-row-until.js';
import { ingestCustomEvents, writePerRowItems } from './event-log.test-support.js';
import { EventLogReader } from './reader.js';
import {
  decodeSegment,
  encodeSegment,
  eraseFromSegments,
  MAX_SEGMENT_SPAN_MS,
  segmentPk,
  segmentPutRequests,
} from './segments.js';

const MIDNIGHT = Date.parse('2026-10-01T00:00:00.000Z');
const MINUTE = 60_000;
const WRITTEN_AT = MIDNIGHT + 10 * HOUR_MS;
const client = defaultEventLogClient();

/** Ingests custom events at explicit recorded times in one call (one segment per hour and minute of span). */
const ingest = (workspaceId: string, rows: readonly { id: string; recordedMs: number }[]) =>
  ingestCustomEvents(workspaceId, rows, WRITTEN_AT);

async function read(
  workspaceId: string,
  fromMs: number,
  toMs: number,
  options: { now?: number; afterKey?: string; batchSize?: number } = {},
) {
  const reader = new EventLogReader({
    ...eventTables,
    now: () => options.now ?? WRITTEN_AT,
    ...(options.batchSize ? { batchSize: options.batchSize } : {}),
  });
  const ids: string[] = [];
  const keys: string[] = [];
  const lines: string[] = [];
  for await (const page of reader.readWindow(workspaceId, 'custom_events', fromMs, toMs, options.afterKey)) {
    lines.push(...page.lines);
    keys.push(...page.keys);
    page.recordedMs.forEach((ms, i) => {
      expect(ms).toBe(Number(page.keys[i]!.slice(0, 13)));
      expect(ms > fromMs && ms <= toMs).toBe(true);
    });
    ids.push(...page.lines.map((line) => (JSON.parse(line) as { id: string }).id));
  }
  return { ids, keys, lines };
}

async function segmentItems(workspaceId: string, hourMs: number) {
  const output = await client.send(
    new QueryCommand({
      TableName: eventTables.eventsTable,
      KeyConditionExpression: 'PK = :pk',
      ExpressionAttributeValues: { ':pk': { S: segmentPk(workspaceId, 'custom_events', hourMs) } },
      ConsistentRead: true,
    }),
  );
  return output.Items ?? [];
}

describe('segments: encoding and cutting', () => {
  it('round-trips rows, and cuts at the hour, the span and the size', () => {
    const rows = [
      { key: eventSk(MIDNIGHT - 1, 'b'), line: '{"id":"b","s":"é\\n"}' },
      { key: eventSk(MIDNIGHT - 1, 'a'), line: '{"id":"a"}' },
      { key: eventSk(MIDNIGHT, 'c'), line: '{"id":"c"}' },
      { key: eventSk(MIDNIGHT + MAX_SEGMENT_SPAN_MS, 'd'), line: '{"id":"d"}' },
      { key: eventSk(MIDNIGHT + MAX_SEGMENT_SPAN_MS + 1, 'e'), line: '{"id":"e"}' },
    ];
    expect(decodeSegment(encodeSegment(rows))).toEqual(rows);
    const requests = segmentPutRequests('ws', 'custom_events', rows, (ms) => Math.floor(ms / 1000) + 10, 7);
    const parts = requests.map((r) => r.PutRequest!.Item!);
    // a and b before midnight (sorted), c and d inside one span, e a span later.
    expect(parts.map((item) => decodeSegment(item.rows!.B!).map((row) => JSON.parse(row.line).id))).toEqual([
      ['a', 'b'],
      ['c', 'd'],
      ['e'],
    ]);
    expect(parts.map((item) => item.PK!.S)).toEqual([
      segmentPk('ws', 'custom_events', MIDNIGHT - HOUR_MS),
      segmentPk('ws', 'custom_events', MIDNIGHT),
      segmentPk('ws', 'custom_events', MIDNIGHT),
    ]);
    expect(parts[1]!.lastMs!.N).toBe(String(MIDNIGHT + MAX_SEGMENT_SPAN_MS));
    expect(parts[1]!.expiresAt!.N).toBe(String(Math.floor((MIDNIGHT + MAX_SEGMENT_SPAN_MS) / 1000) + 10));
    const big = Array.from({ length: 3 }, (_, i) => ({
      key: eventSk(MIDNIGHT, `r${i}`),
      line: 'x'.repeat(150_000),
    }));
    expect(segmentPutRequests('ws', 'custom_events', big, () => 0, 7)).toHaveLength(2);
  });
});

describe('EventLogReader on segments', () => {
  it('gives each row of a segment spanning two windows to exactly one window, edges included', async () => {
    const workspaceId = `ws_${randomUUID()}`;
    const edge = MIDNIGHT + 2 * HOUR_MS + 15 * MINUTE;
    const times = [edge - 20_000, edge - 1, edge, edge, edge + 1, edge + 20_000];
    const rows = times.map((recordedMs, i) => ({ id: `r${i}`, recordedMs }));
    await ingest(workspaceId, rows);
    // One segment holds them all, across the window edge.
    expect(await segmentItems(workspaceId, MIDNIGHT + 2 * HOUR_MS)).toHaveLength(1);

    const before = await read(workspaceId, edge - 5 * MINUTE, edge);
    const after = await read(workspaceId, edge, edge + 5 * MINUTE);
    expect(before.ids).toEqual(['r0', 'r1', 'r2', 'r3']);
    expect(after.ids).toEqual(['r4', 'r5']);
    // Windows of one millisecond at the edge, and a resumed read from inside the segment.
    expect((await read(workspaceId, edge - 1, edge)).ids).toEqual(['r2', 'r3']);
    expect((await read(workspaceId, edge, edge + 1)).ids).toEqual(['r4']);
    expect(
      (await read(workspaceId, edge - 5 * MINUTE, edge + 5 * MINUTE, { afterKey: before.keys[2] })).ids,
    ).toEqual(['r3', 'r4', 'r5']);
    // A later window whose start is less than a span after the segment's first row reads none of its earlier rows.
    expect((await read(workspaceId, edge + 1, edge + 5 * MINUTE)).ids).toEqual(['r5']);

    const reader = new EventLogReader({ ...eventTables, now: () => WRITTEN_AT });
    expect(await reader.hasRowsAfter(workspaceId, 'custom_events', edge + 1, edge + 19_999)).toBe(false);
    expect(await reader.hasRowsAfter(workspaceId, 'custom_events', edge + 19_999, edge + 20_000)).toBe(true);
    expect(await reader.hasRowsAfter(workspaceId, 'custom_events', edge - 20_001, edge - 20_000)).toBe(true);
    expect(await reader.countWindow(workspaceId, 'custom_events', edge - 5 * MINUTE, edge)).toBe(4);
  });

  it('merges overlapping segments of several calls in position order, across an hour', async () => {
    const workspaceId = `ws_${randomUUID()}`;
    const base = MIDNIGHT + 3 * HOUR_MS - 30_000;
    // Three calls whose times interleave (concurrent ingests), the first crossing the hour.
    const calls = [0, 1, 2].map((c) =>
      Array.from({ length: 40 }, (_, i) => ({
        id: `c${c}_${String(i).padStart(2, '0')}`,
        recordedMs: base + i * 1_500 + c,
      })),
    );
    for (const rows of calls) await ingest(workspaceId, rows);
    const expected = calls
      .flat()
      .sort((a, b) => a.recordedMs - b.recordedMs || (a.id < b.id ? -1 : 1))
      .map((row) => row.id);
    expect((await read(workspaceId, base - 1, base + HOUR_MS, { batchSize: 7 })).ids).toEqual(expected);
  });

  it('reads per-row items written before segments beside segments, a position held by both once', async () => {
    const workspaceId = `ws_${randomUUID()}`;
    const t = MIDNIGHT + 4 * HOUR_MS;
    await writePerRowItems(workspaceId, [
      { id: 'old_1', recordedMs: t + 1 },
      { id: 'old_3', recordedMs: t + 3 },
      { id: 'both', recordedMs: t + 4, line: JSON.stringify({ id: 'both', version: 'per-row' }) },
      { id: 'old_9', recordedMs: t + 2 * HOUR_MS },
    ]);
    await ingest(workspaceId, [
      { id: 'new_2', recordedMs: t + 2 },
      { id: 'both', recordedMs: t + 4 },
      { id: 'new_5', recordedMs: t + 5 },
    ]);
    const { ids, lines } = await read(workspaceId, t, t + 3 * HOUR_MS);
    expect(ids).toEqual(['old_1', 'new_2', 'old_3', 'both', 'new_5', 'old_9']);
    expect(JSON.parse(lines[3]!)).not.toHaveProperty('version');
    const reader = new EventLogReader({ ...eventTables, now: () => WRITTEN_AT });
    expect(await reader.countWindow(workspaceId, 'custom_events', t, t + 3 * HOUR_MS)).toBe(6);
    expect(await reader.hasRowsAfter(workspaceId, 'custom_events', t + HOUR_MS, t + 3 * HOUR_MS)).toBe(true);
  });

  it('leaves out the rows of a segment that have expired, each by its own recorded time', async () => {
    const workspaceId = `ws_${randomUUID()}`;
    const t = MIDNIGHT + 5 * HOUR_MS;
    await ingest(workspaceId, [
      { id: 'a', recordedMs: t },
      { id: 'b', recordedMs: t + 30_000 },
    ]);
    // The writer keeps rows 35 days: at t + 35 days + 10 s the first has expired, the second not.
    const now = t + 35 * 86_400_000 + 10_000;
    expect((await read(workspaceId, t - 1, t + MINUTE, { now })).ids).toEqual(['b']);
    const reader = new EventLogReader({ ...eventTables, now: () => now });
    expect(await reader.hasRowsAfter(workspaceId, 'custom_events', t - 1, t)).toBe(false);
    expect(await reader.hasRowsAfter(workspaceId, 'custom_events', t, t + MINUTE)).toBe(true);
    expect((await read(workspaceId, t - 1, t + MINUTE, { now: now + 30_000 })).ids).toEqual([]);
  });
});

describe('the per-row marker: readers stop querying the per-row shards', () => {
  it('reads a per-row item written before the switch until it expires, and no shard after the marker', async () => {
    const workspaceId = `ws_${randomUUID()}`;
    const t = MIDNIGHT + 2 * HOUR_MS;
    await writePerRowItems(workspaceId, [{ id: 'legacy', recordedMs: t }]);
    // The first write of a version without per-row items records the marker (its clock + 25 h).
    await ingest(workspaceId, [{ id: 'new', recordedMs: WRITTEN_AT }]);
    expect(PER_ROW_UNTIL_MARGIN_MS).toBeGreaterThan(MAX_RECORDED_AHEAD_MS);
    expect(await readPerRowUntil(client, eventTables.eventsTable, workspaceId)).toBe(
      WRITTEN_AT + PER_ROW_UNTIL_MARGIN_MS,
    );
    // A per-row item past the marker no writer could have written: read only if the shards were queried.
    await writePerRowItems(workspaceId, [{ id: 'stray', recordedMs: WRITTEN_AT + 30 * HOUR_MS }]);
    const shardQueries: string[] = [];
    const counting = {
      send: (command: { input?: { ExpressionAttributeValues?: Record<string, { S?: string }> } }) => {
        const pk = command.input?.ExpressionAttributeValues?.[':pk']?.S;
        if (command instanceof QueryCommand && pk !== undefined && /#\d+$/.test(pk)) shardQueries.push(pk);
        return client.send(command as never);
      },
    } as unknown as DynamoDBClient;
    const readAt = async (now: number) => {
      const reader = new EventLogReader({ ...eventTables, client: counting, now: () => now });
      const ids: string[] = [];
      for await (const page of reader.readWindow(
        workspaceId,
        'custom_events',
        t - 1,
        WRITTEN_AT + 40 * HOUR_MS,
      ))
        ids.push(...page.lines.map((line) => (JSON.parse(line) as { id: string }).id));
      return ids;
    };
    expect(await readAt(WRITTEN_AT)).toEqual(['legacy', 'new']);
    // Hours t..t + 34 h (the last beginning by the marker) queried their shards, none after.
    expect(new Set(shardQueries.map((pk) => pk.replace(/#\d+$/, ''))).size).toBe(34);
    const reader = new EventLogReader({ ...eventTables, client: counting, now: () => WRITTEN_AT });
    expect(
      await reader.hasRowsAfter(
        workspaceId,
        'custom_events',
        WRITTEN_AT + 26 * HOUR_MS,
        WRITTEN_AT + 40 * HOUR_MS,
      ),
    ).toBe(false);
    // The legacy item is read until it expires, 35 days after it was recorded.
    const expiresMs = t + 35 * 86_400_000;
    expect(await readAt(expiresMs - 1000)).toEqual(['legacy', 'new']);
    expect(await readAt(expiresMs + 1000)).toEqual(['new']);
  });
});

describe('eraseFromSegments', () => {
  it('rewrites a segment without the matching rows, deletes an emptied one, and reads again after a change', async () => {
    const workspaceId = `ws_${randomUUID()}`;
    const t = MIDNIGHT + 6 * HOUR_MS;
    const hour = t;
    await ingest(workspaceId, [
      { id: 'keep_1', recordedMs: t + 1 },
      { id: 'gone_1', recordedMs: t + 2 },
      { id: 'keep_2', recordedMs: t + 3 },
    ]);
    await ingest(workspaceId, [{ id: 'gone_2', recordedMs: t + 2 * MINUTE }]);
    const pk = segmentPk(workspaceId, 'custom_events', hour);
    const [first] = await segmentItems(workspaceId, hour);

    // Between the erasure's read and its write, another rewrite changes the first segment (a row added): the
    // conditional write fails, and the erasure reads the segment again and erases from what is there now.
    let interfered = false;
    const interfering = {
      send: async (command: { input: { ConditionExpression?: string } }) => {
        if (!interfered && command.input.ConditionExpression !== undefined) {
          interfered = true;
          const rows = decodeSegment(first!.rows!.B!);
          const extra = { key: eventSk(t + 4, 'gone_3'), line: JSON.stringify({ id: 'gone_3' }) };
          await client.send(
            new PutItemCommand({
              TableName: eventTables.eventsTable,
              Item: { ...first!, rows: { B: encodeSegment([...rows, extra]) } },
            }),
          );
        }
        return client.send(command as never);
      },
    } as unknown as DynamoDBClient;
    const erased = await eraseFromSegments(interfering, eventTables.eventsTable, pk, (line) =>
      (JSON.parse(line) as { id: string }).id.startsWith('gone'),
    );
    expect(interfered).toBe(true);
    expect(erased).toBe(3);
    const items = await segmentItems(workspaceId, hour);
    expect(items).toHaveLength(1);
    expect(decodeSegment(items[0]!.rows!.B!).map((row) => JSON.parse(row.line).id)).toEqual([
      'keep_1',
      'keep_2',
    ]);
    expect(items[0]!.count!.N).toBe('2');
    expect((await read(workspaceId, t, t + HOUR_MS - 1)).ids).toEqual(['keep_1', 'keep_2']);
    expect(await eraseFromSegments(client, eventTables.eventsTable, pk, () => true)).toBe(2);
    expect(await segmentItems(workspaceId, hour)).toEqual([]);
  });
});
