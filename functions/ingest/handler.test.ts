import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { ErasureLogStore } from '@sluice/control';
import {
  type BusEventFigures,
  DynamoRejectedEvents,
  EventLogReader,
  EventLogWriter,
  type IngestMetrics,
  redriveDeadLetters,
  redriveRejected,
  workspaceSource,
} from '@sluice/eventlog';
import { invokeAsync, MemoryDeadLetterQueue } from '@sluice/devstack';
import type { EventBridgeEvent } from 'aws-lambda';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { controlTable, eventTables } from '../../test/helpers/tables.js';

let handler: (event: EventBridgeEvent<string, unknown>) => Promise<unknown>;
let createIngestHandler: typeof import('./handler.js').createIngestHandler;

beforeAll(async () => {
  process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';
  ({ handler, createIngestHandler } = await import('./handler.js'));
});

afterEach(() => {
  vi.restoreAllMocks();
});

function busEvent(
  detailType: string,
  detail: unknown,
  time = new Date().toISOString(),
): EventBridgeEvent<string, unknown> {
  const workspaceId = (detail as { workspaceId?: unknown }).workspaceId;
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': detailType,
    source: workspaceSource(typeof workspaceId === 'string' ? workspaceId : 'unknown'),
    account: '123456789012',
    time,
    region: 'us-east-1',
    resources: [],
    detail,
  };
}

async function lines(iterable: AsyncIterable<{ lines: string[] }>) {
  const all: string[] = [];
  for await (const page of iterable) all.push(...page.lines);
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
      new EventLogReader(eventTables).readWindow(workspaceId, 'custom_events', now - 60_000, Date.now()),
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
      new EventLogReader(eventTables).readWindow(
        workspaceId,
        'custom_events',
        before - 7_200_000,
        Date.now(),
      ),
    );
    expect(written).toHaveLength(1);
    expect(Date.parse(JSON.parse(written[0]!).recorded_at)).toBeGreaterThanOrEqual(before);
  });

  it("writes the second product's rows from sluice.events, and logs what it ignored or did not export", async () => {
    // Prepare: a message and its receipt, an older receipt, a click on it; a change of an unknown message; a
    // project in progress; an opt-out.
    const workspaceId = `ws_${randomUUID()}`;
    const now = Date.now();
    const at = (minutesAgo: number) => new Date(now - minutesAgo * 60_000).toISOString();
    const info = vi.spyOn(Logger.prototype, 'info');
    const change = (id: string, minutesAgo: number, fields: Record<string, unknown>) => ({
      dataset: 'message_events',
      message_id: id,
      updated_at: at(minutesAgo),
      ...fields,
    });
    const events = [
      {
        dataset: 'message_events',
        message_id: 'msg_1',
        conversation_id: 'cnv_1',
        direction: 'outbound',
        status: 'sent',
        from_phone_number: '471016',
        to_phone_number: '5555550123',
        media_url_count: 0,
        send_type: 'test',
        created_at: at(10),
        updated_at: at(10),
      },
      change('msg_1', 5, { status: 'delivered' }),
      change('msg_1', 8, { status: 'failed' }),
      change('msg_1', 4, { url_click_count: 1 }),
      change('msg_9', 4, { status: 'delivered' }),
      { dataset: 'project_summary', project_id: 'prj_1', name: 'GOTV', completed_at: null },
      { dataset: 'opt_out_events', opt_out_id: 'opt_1', phone_number: '5555550123', created_at: at(3) },
    ];

    // Act
    const result = await handler(busEvent('sluice.events', { workspaceId, events }));

    // Assess
    const currentRows = { emitted: 2, kept: 1, outOfOrder: 1, notComplete: 1, afterCompletion: 0 };
    expect(result).toMatchObject({
      kind: 'events',
      accepted: 4,
      invalid: [
        { index: 4, reason: expect.stringMatching(/message_id: no message with this id was received/) },
      ],
      currentRows,
    });
    expect(info).toHaveBeenCalledWith('Ingested events', expect.objectContaining({ currentRows }));
    const written = async (dataset: 'message_events' | 'opt_out_events') =>
      (
        await lines(
          new EventLogReader(eventTables).readWindow(workspaceId, dataset, now - 60_000, Date.now()),
        )
      ).map((line) => JSON.parse(line));
    expect(
      (await written('message_events')).map((row) => [row.status, row.send_type, row.to_phone_number]),
    ).toEqual([
      ['sent', 'test', '+15555550123'],
      ['delivered', 'test', '+15555550123'],
    ]);
    expect((await written('opt_out_events')).map((row) => row.organization_id)).toEqual([workspaceId]);
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
    const ids = (await lines(new EventLogReader(eventTables).readSubscribers(workspaceId))).map(
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

  it('refuses an event whose source names another workspace: IAM on events:source decides who writes', async () => {
    // Prepare
    const workspaceId = `ws_${randomUUID()}`;
    const event = {
      ...busEvent('sluice.events', { workspaceId, events: [] }),
      source: workspaceSource('someone_else'),
    };

    // Act
    const result = await handler(event);

    // Assess
    expect(result).toEqual({
      kind: 'refused',
      reason: `source: must be "sluice.workspace.${workspaceId}" for workspace "${workspaceId}", got "sluice.workspace.someone_else"`,
    });
  });
});

describe('ingest keeps and counts what it refuses', () => {
  const logger = new Logger({ serviceName: 'test', logLevel: 'SILENT' });
  const writer = new EventLogWriter({ ...eventTables, logger, explicitRecordedAt: 'ignore' });
  const rejected = new DynamoRejectedEvents(controlTable);
  const erasures = new ErasureLogStore(controlTable);
  function counting() {
    const figures: BusEventFigures[] = [];
    const metrics: IngestMetrics = { refusedBehindExport: () => {}, busEvent: (f) => figures.push(f) };
    return { figures, metrics };
  }

  it('keeps invalid rows with their reasons, counts them and the drops per workspace, and redrives them after a fix', async () => {
    // Prepare
    const workspaceId = `ws_${randomUUID()}`;
    const sentAt = Date.now() - 90_000;
    const { figures, metrics } = counting();
    const ingest = createIngestHandler(writer, logger, { rejected, metrics, now: () => sentAt + 90_000 });
    const good = { dataset: 'custom_events', id: 'ce_ok', event_name: 'a', occurred_at: sentAt };
    const bad = { dataset: 'custom_events', id: 'ce_bad', event_name: '', occurred_at: sentAt };
    const late = {
      dataset: 'custom_events',
      id: 'ce_old',
      event_name: 'a',
      occurred_at: sentAt - 8 * 86_400_000,
    };

    // Act
    await ingest(
      busEvent(
        'sluice.events',
        { workspaceId, events: [good, bad, late, { ...good, id: 'ce_t', test: true }] },
        new Date(sentAt).toISOString(),
      ),
    );
    const listed = [];
    for await (const rejection of rejected.list(workspaceId)) listed.push(rejection);

    // Assess: the refused row is kept as a bus event holding only it, with its reason
    expect(listed).toEqual([
      expect.objectContaining({
        workspaceId,
        kind: 'rows',
        reasons: [expect.stringMatching(/^events\[0\]: event_name: /)],
        event: expect.objectContaining({ detail: { workspaceId, events: [bad] } }),
      }),
    ]);
    expect(figures).toEqual([
      {
        workspaceId,
        lagMs: 90_000,
        rejectedRows: 1,
        rejectedEnvelopes: 0,
        dropped: { test: 1, history: 0, late: 1 },
      },
    ]);

    // Act: the row fixed (here: the stored bus event corrected), then redriven
    const [kept] = listed;
    await rejected.put({
      ...kept!,
      event: { ...kept!.event, detail: { workspaceId, events: [{ ...bad, event_name: 'fixed' }] } },
    });
    const summary = await redriveRejected(rejected, writer, logger, { workspaceId, erasures });

    // Assess: written, judged by when it was sent, and removed
    expect(summary).toMatchObject({ rejections: 1, redriven: 1, written: { events: 1 }, stillRejected: [] });
    const left = [];
    for await (const rejection of rejected.list(workspaceId)) left.push(rejection);
    expect(left).toEqual([]);
    const written = await lines(
      new EventLogReader(eventTables).readWindow(workspaceId, 'custom_events', sentAt - 1, Date.now()),
    );
    expect(written.map((line) => JSON.parse(line).id).sort()).toEqual(['ce_bad', 'ce_ok']);
  });

  it('keeps an envelope whose source names another workspace, counted for the workspace it names; a redrive refuses it again and keeps it', async () => {
    // Prepare
    const workspaceId = `ws_${randomUUID()}`;
    const { figures, metrics } = counting();
    const ingest = createIngestHandler(writer, logger, { rejected, metrics });
    const event = {
      ...busEvent('sluice.events', {
        workspaceId,
        events: [{ dataset: 'custom_events', id: 'ce_1', event_name: 'a', occurred_at: Date.now() }],
      }),
      source: workspaceSource('someone_else'),
    };

    // Act
    await ingest(event);
    const summary = await redriveRejected(rejected, writer, logger, { workspaceId, erasures });
    const listed = [];
    for await (const rejection of rejected.list(workspaceId)) listed.push(rejection);

    // Assess
    expect(figures).toMatchObject([{ workspaceId, rejectedRows: 0, rejectedEnvelopes: 1 }]);
    expect(summary).toMatchObject({ rejections: 1, redriven: 0, stillRejected: [{ workspaceId }] });
    expect(listed).toEqual([
      expect.objectContaining({
        kind: 'envelope',
        reasons: [expect.stringMatching(/^source: must be "sluice.workspace./)],
        event: expect.objectContaining({ id: event.id, source: 'sluice.workspace.someone_else' }),
      }),
    ]);
  });
});

describe('ingest failures: dead-letter queue and redrive', () => {
  it('sends a bus event whose write failed on every attempt to the queue, and redrive writes it into the log', async () => {
    // Prepare: a write that fails for real (DynamoDB Local has no such table), invoked as EventBridge does
    const logger = new Logger({ serviceName: 'test', logLevel: 'SILENT' });
    const broken = createIngestHandler(
      new EventLogWriter({
        ...eventTables,
        eventsTable: `missing-${randomUUID()}`,
        logger,
        explicitRecordedAt: 'ignore',
      }),
      logger,
    );
    const attempts = vi.fn(broken);
    const queue = new MemoryDeadLetterQueue();
    const workspaceId = `ws_${randomUUID()}`;
    const sentAt = Date.now();
    const event = busEvent(
      'sluice.events',
      {
        workspaceId,
        events: [
          { dataset: 'custom_events', id: 'ce_1', event_name: 'order.placed', occurred_at: sentAt - 60_000 },
          { dataset: 'custom_events', id: 'ce_2', event_name: 'order.paid', occurred_at: sentAt - 30_000 },
        ],
      },
      new Date(sentAt).toISOString(),
    );

    // Act: three attempts fail, the record lands in the queue; eight days later an operator redrives it
    const outcome = await invokeAsync(attempts, event, {
      onFailure: (record) => queue.send(JSON.stringify(record)),
    });
    const redriveAt = sentAt + 8 * 24 * 3_600_000;
    const summary = await redriveDeadLetters(
      queue,
      new EventLogWriter({ ...eventTables, now: () => redriveAt, logger, explicitRecordedAt: 'ignore' }),
      logger,
      { erasures: new ErasureLogStore(controlTable) },
    );

    // Assess
    expect(outcome).toMatchObject({
      status: 'failed',
      attempts: 3,
      record: { responsePayload: { errorType: 'ResourceNotFoundException' } },
    });
    expect(attempts).toHaveBeenCalledTimes(3);
    // Judged by when it was sent, not by the redrive eight days later: not dropped as late.
    expect(summary).toMatchObject({
      messages: 1,
      redriven: 1,
      events: { accepted: 2, dropped: { test: 0, history: 0, late: 0 }, invalid: 0 },
      left: [],
    });
    expect(queue.size).toBe(0);
    const written = await lines(
      new EventLogReader(eventTables).readWindow(workspaceId, 'custom_events', redriveAt - 1, redriveAt),
    );
    expect(written.map((line) => JSON.parse(line).id).sort()).toEqual(['ce_1', 'ce_2']);
  });

  it('leaves a message whose write fails again in the queue, and reports it', async () => {
    // Prepare
    const logger = new Logger({ serviceName: 'test', logLevel: 'SILENT' });
    const broken = new EventLogWriter({
      ...eventTables,
      eventsTable: `missing-${randomUUID()}`,
      logger,
      explicitRecordedAt: 'ignore',
    });
    const queue = new MemoryDeadLetterQueue();
    const workspaceId = `ws_${randomUUID()}`;
    await invokeAsync(
      createIngestHandler(broken, logger),
      busEvent('sluice.events', {
        workspaceId,
        events: [{ dataset: 'custom_events', id: 'ce_1', event_name: 'x', occurred_at: Date.now() }],
      }),
      { onFailure: (record) => queue.send(JSON.stringify(record)) },
    );

    // Act
    const summary = await redriveDeadLetters(queue, broken, logger, {
      erasures: new ErasureLogStore(controlTable),
    });
    queue.expireVisibility();

    // Assess
    expect(summary.redriven).toBe(0);
    expect(summary.left).toEqual([
      {
        messageId: expect.any(String),
        reason: expect.stringMatching(/^write failed again: ResourceNotFound/),
      },
    ]);
    expect(queue.size).toBe(1);
  });
});
