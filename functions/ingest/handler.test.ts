import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { EventLogReader } from '@sluice/eventlog';
import type { EventBridgeEvent } from 'aws-lambda';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';

let handler: (event: EventBridgeEvent<string, unknown>) => Promise<unknown>;

beforeAll(async () => {
  process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';
  ({ handler } = await import('./handler.js'));
});

afterEach(() => {
  vi.restoreAllMocks();
});

function busEvent(detailType: string, detail: unknown): EventBridgeEvent<string, unknown> {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': detailType,
    source: 'com.example.messaging',
    account: '123456789012',
    time: new Date().toISOString(),
    region: 'us-east-1',
    resources: [],
    detail,
  };
}

async function lines(iterable: AsyncIterable<string[]>) {
  const all: string[] = [];
  for await (const page of iterable) all.push(...page);
  return all;
}

describe('ingest handler', () => {
  it('writes sluice.events through the library and returns the counts', async () => {
    // Prepare
    const workspaceId = `ws_${randomUUID()}`;
    const now = Date.now();
    const warn = vi.spyOn(Logger.prototype, 'warn');
    const event = (id: string, extra: Record<string, unknown> = {}) => ({
      dataset: 'custom_events',
      id,
      event_name: 'order.placed',
      occurred_at: new Date(now).toISOString(),
      ...extra,
    });

    // Act
    const result = await handler(
      busEvent('sluice.events', {
        workspaceId,
        events: [event('ce_1'), event('ce_2', { test: true }), event('ce_3', { event_name: '' })],
      }),
    );

    // Assess
    expect(result).toMatchObject({
      kind: 'events',
      workspaceId,
      accepted: 1,
      dropped: { test: 1, history: 0, late: 0 },
      invalid: [{ index: 2, reason: expect.stringMatching(/^event_name: /) }],
    });
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('Refused 1 invalid events'), expect.anything());
    const written = await lines(
      new EventLogReader().readWindow(workspaceId, 'custom_events', now - 60_000, Date.now()),
    );
    expect(written.map((line) => JSON.parse(line).id)).toEqual(['ce_1']);
  });

  it("records events at the ingest's clock, ignoring a producer's recorded_at", async () => {
    // Prepare: a recorded_at an hour back, where an export could already have passed.
    const workspaceId = `ws_${randomUUID()}`;
    const before = Date.now();
    const event = {
      dataset: 'custom_events',
      id: 'ce_late',
      event_name: 'order.placed',
      occurred_at: new Date(before - 7_200_000).toISOString(),
      recorded_at: new Date(before - 3_600_000).toISOString(),
    };

    // Act
    const result = await handler(busEvent('sluice.events', { workspaceId, events: [event] }));

    // Assess
    expect(result).toMatchObject({ kind: 'events', accepted: 1, recordedAtIgnored: 1, invalid: [] });
    const written = await lines(
      new EventLogReader().readWindow(workspaceId, 'custom_events', before - 7_200_000, Date.now()),
    );
    expect(written).toHaveLength(1);
    expect(Date.parse(JSON.parse(written[0]!).recorded_at)).toBeGreaterThanOrEqual(before);
  });

  it('upserts and deletes subscribers from sluice.subscribers', async () => {
    const workspaceId = `ws_${randomUUID()}`;
    const subscriber = (id: string) => ({
      id,
      email: `${id}@example.com`,
      status: 'active',
      created_at: '2026-01-01T00:00:00Z',
      updated_at: '2026-01-02T00:00:00Z',
    });
    await handler(
      busEvent('sluice.subscribers', { workspaceId, upsert: [subscriber('a'), subscriber('b')] }),
    );

    const result = await handler(
      busEvent('sluice.subscribers', { workspaceId, upsert: [subscriber('c')], delete: ['a'] }),
    );

    expect(result).toMatchObject({
      kind: 'subscribers',
      upserted: { accepted: 1 },
      deleted: { accepted: 1 },
    });
    const ids = (await lines(new EventLogReader().readSubscribers(workspaceId))).map(
      (line) => JSON.parse(line).id,
    );
    expect(ids.sort()).toEqual(['b', 'c']);
  });

  it('refuses a malformed detail with a logged reason, and ignores other detail-types', async () => {
    const error = vi.spyOn(Logger.prototype, 'error');

    const refused = await handler(busEvent('sluice.events', { events: 'nope' }));
    const ignored = await handler(busEvent('order.shipped', { anything: true }));

    expect(refused).toEqual({ kind: 'refused', reason: expect.stringMatching(/workspaceId: .*; events: /) });
    expect(error).toHaveBeenCalledWith(expect.stringContaining('Refused a bus event'), expect.anything());
    expect(ignored).toEqual({ kind: 'ignored', detailType: 'order.shipped' });
  });
});
