import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Logger } from '@aws-lambda-powertools/logger';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import {
  ArchiveCursorStore,
  ControlExportPositions,
  cursorSk,
  documentClient,
  ErasureLogStore,
  workspacePk,
} from '@sluice/control';
import {
  DynamoRejectedEvents,
  EventLogReader,
  EventLogWriter,
  type IngestMetrics,
  ingestBusEvent,
  workspaceSource,
} from '@sluice/eventlog';
import type { EventDataset } from '@sluice/core';
import { MemoryDeadLetterQueue } from '@sluice/devstack';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Command } from 'commander';
import { loadRuntimeConfig } from '@sluice/local/runtime-config';
import { UsageError } from '../context.js';
import { runCommands } from './command.js';
import { createDataCommands } from './data.js';
import { controlTable, eventTables } from '../../../../test/helpers/tables.js';

const logger = new Logger({ serviceName: 'test', logLevel: 'SILENT' });
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-data-cli-'));
});

/** The test environment's tables, and no dead-letter queue URL (`events redrive` must be given one). */
const testConfig = () => loadRuntimeConfig({ ...process.env, SLUICE_INGEST_DLQ_URL: undefined });

/** The CLI's writer, checking explicit recorded times against the cursors in DynamoDB Local. */
function cli(now?: () => number, options: { isTTY?: boolean; queue?: MemoryDeadLetterQueue } = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const progress: string[] = [];
  const queueUrls: string[] = [];
  const queue = options.queue ?? new MemoryDeadLetterQueue();
  const refusals: { workspaceId: string; dataset: string; count: number }[] = [];
  const metrics: IngestMetrics = {
    refusedBehindExport: (workspaceId, dataset, count) => refusals.push({ workspaceId, dataset, count }),
  };
  const list = createDataCommands({
    out: (line) => out.push(line),
    err: (line) => err.push(line),
    writer: () =>
      new EventLogWriter({
        ...eventTables,
        logger,
        metrics,
        explicitRecordedAt: { refuseAtOrBehind: new ControlExportPositions(controlTable) },
        lateHours: new ArchiveCursorStore(controlTable),
      }),
    progress: { isTTY: options.isTTY ?? false, columns: 100, write: (text: string) => progress.push(text) },
    deadLetterQueue: (url) => {
      queueUrls.push(url);
      return queue;
    },
    rejected: () => new DynamoRejectedEvents(controlTable),
    erasures: () => new ErasureLogStore(controlTable),
    config: testConfig,
    ...(now ? { now } : {}),
  });
  const run = (name: string, args: string[]) => runCommands(list, [...name.split(' '), ...args]);
  return { run, out, err, progress, queueUrls, refusals };
}

/** A destination's cursor, as the engine leaves it. */
async function putCursor(workspaceId: string, destinationId: string, dataset: string, item: object) {
  await documentClient.send(
    new PutCommand({
      TableName: process.env.SLUICE_CONTROL_TABLE,
      Item: { PK: workspacePk(workspaceId), SK: cursorSk(destinationId, dataset as 'email_events'), ...item },
    }),
  );
}

async function file(name: string, lines: string[]): Promise<string> {
  const path = join(dir, `${randomUUID()}-${name}`);
  await writeFile(path, `${lines.join('\n')}\n`);
  return path;
}

async function readLines(iterable: AsyncIterable<{ lines: string[] }>): Promise<string[]> {
  const all: string[] = [];
  for await (const page of iterable) all.push(...page.lines);
  return all;
}

/** The ids of the custom events a workspace recorded in the last minute. */
async function customEventIdsOfLastMinute(workspaceId: string): Promise<string[]> {
  const now = Date.now();
  const lines = await readLines(
    new EventLogReader(eventTables).readWindow(workspaceId, 'custom_events', now - 60_000, now),
  );
  return lines.map((line) => JSON.parse(line).id);
}

describe('events redrive', () => {
  it('writes the queued bus events into the log, deletes them, and fails while unreadable ones stay', async () => {
    // Prepare
    const queue = new MemoryDeadLetterQueue();
    const workspaceId = `ws_${randomUUID()}`;
    const detail = {
      workspaceId,
      events: [
        { dataset: 'custom_events', id: 'ce_r', event_name: 'x', occurred_at: new Date().toISOString() },
      ],
    };
    const event = {
      'detail-type': 'sluice.events',
      source: workspaceSource(workspaceId),
      time: new Date().toISOString(),
      detail,
    };
    await queue.send(
      JSON.stringify({ requestContext: { condition: 'RetriesExhausted' }, requestPayload: event }),
    );
    await queue.send('not json');
    const { run, out, err, queueUrls } = cli(undefined, { queue });

    // Act
    const failure = await run('events redrive', ['--queue-url', 'https://sqs.example/dlq', '--json']).catch(
      (error: unknown) => error,
    );

    // Assess
    expect(queueUrls).toEqual(['https://sqs.example/dlq']);
    expect(JSON.parse(out[0]!)).toMatchObject({ messages: 2, redriven: 1, events: { accepted: 1 } });
    expect(err).toEqual([expect.stringMatching(/^message .* left: not JSON$/)]);
    expect((failure as Error).message).toMatch(/^1 messages stay in the queue/);
    expect(queue.size).toBe(1);
    expect(await customEventIdsOfLastMinute(workspaceId)).toEqual(['ce_r']);
  });

  it('asks for the queue URL when neither the option nor SLUICE_INGEST_DLQ_URL gives it', async () => {
    const { run } = cli();

    await expect(run('events redrive', [])).rejects.toBeInstanceOf(UsageError);
  });
});

describe('events rejected', () => {
  it('lists what ingestion refused with the reasons, and redrives it once the rules accept it; what is refused again stays and fails the command', async () => {
    // Prepare: a bus event with one bad row and one envelope of another workspace's source, refused by the
    // ingest path into the control table of DynamoDB Local
    const workspaceId = `ws_${randomUUID()}`;
    const rejected = new DynamoRejectedEvents(controlTable);
    const writer = new EventLogWriter({ ...eventTables, logger, explicitRecordedAt: 'ignore' });
    const row = {
      dataset: 'custom_events',
      id: 'ce_x',
      event_name: 'x',
      occurred_at: new Date().toISOString(),
    };
    const event = (source: string, events: unknown[]) => ({
      id: randomUUID(),
      'detail-type': 'sluice.events',
      source,
      time: new Date().toISOString(),
      detail: { workspaceId, events },
    });
    await ingestBusEvent(
      writer,
      event(workspaceSource(workspaceId), [{ ...row, occurred_at: 'yesterday' }]),
      logger,
      {
        rejected,
      },
    );
    await ingestBusEvent(writer, event(workspaceSource('other'), [row]), logger, { rejected });
    const { run, out, err } = createCli(rejected);

    // Act: list
    await run('events rejected list', ['--workspace', workspaceId, '--json']);

    // Assess
    const listed = out.map((line) => JSON.parse(line));
    expect(listed.map((r) => [r.kind, r.reasons])).toEqual([
      ['rows', [expect.stringMatching(/^events\[0\]: occurred_at: /)]],
      ['envelope', [expect.stringMatching(/^source: must be "sluice\.workspace\./)]],
    ]);

    // Act: the envelope's producer is fixed here by correcting the stored source; the bad row is not fixed
    const envelope = listed[1];
    await rejected.put({ ...envelope, event: { ...envelope.event, source: workspaceSource(workspaceId) } });
    out.length = 0;
    const failure = await run('events rejected redrive', ['--workspace', workspaceId, '--json']).catch(
      (error: unknown) => error,
    );

    // Assess: the envelope's row is written and the envelope removed; the bad row stays, reported
    expect(JSON.parse(out[0]!)).toMatchObject({
      rejections: 2,
      redriven: 1,
      written: { events: 1 },
      stillRejected: [{ workspaceId, id: listed[0].id }],
    });
    expect(err).toEqual([expect.stringContaining(`${workspaceId} ${listed[0].id} refused again: events[0]`)]);
    expect((failure as Error).message).toBe('1 rejections stay (listed above)');
    out.length = 0;
    await run('events rejected list', ['--workspace', workspaceId]);
    expect(out).toEqual([
      expect.stringContaining(listed[0].id),
      expect.stringMatching(/^ {2}events\[0\]/),
      '1 rejections',
    ]);
    expect(await customEventIdsOfLastMinute(workspaceId)).toEqual(['ce_x']);
  });

  it('redrive leaves out the rows of a person erased after the bus event was sent, and removes what is left empty', async () => {
    // Prepare: rejections sent a minute ago (stored after the erasure ran, as a refusal racing it would be), and
    // an erasure of Fay recorded in the erasure log of DynamoDB Local
    const workspaceId = `ws_${randomUUID()}`;
    const rejected = new DynamoRejectedEvents(controlTable);
    const sentAt = new Date(Date.now() - 60_000).toISOString();
    const row = (id: string, fields: object) => ({
      dataset: 'custom_events',
      id,
      event_name: 'x',
      occurred_at: sentAt,
      ...fields,
    });
    const event = (events: unknown[]) => ({
      id: randomUUID(),
      'detail-type': 'sluice.events',
      source: workspaceSource(workspaceId),
      time: sentAt,
      detail: { workspaceId, events },
    });
    await new ErasureLogStore(controlTable).record(workspaceId, {
      kind: 'person',
      subscriberIds: ['sub_fay'],
      emails: ['fay@example.com'],
    });
    const reasons = ['events[0]: was refused', 'events[1]: was refused'];
    await rejected.put({
      workspaceId,
      kind: 'rows',
      event: event([
        row('ce_fay', { subscriber_id: 'sub_fay' }),
        row('ce_gus', { subscriber_id: 'sub_gus' }),
      ]),
      reasons,
    });
    await rejected.put({
      workspaceId,
      kind: 'rows',
      event: event([row('ce_fay_props', { properties: { email: 'FAY@example.com' } })]),
      reasons: reasons.slice(0, 1),
    });
    const { run, out } = createCli(rejected);

    // Act
    await run('events rejected redrive', ['--workspace', workspaceId, '--json']);

    // Assess: only Gus's row is written; both rejections are removed
    expect(JSON.parse(out[0]!)).toMatchObject({
      rejections: 2,
      redriven: 2,
      written: { events: 1 },
      erased: { events: 2, subscribers: 0 },
      stillRejected: [],
      left: [],
    });
    expect(await customEventIdsOfLastMinute(workspaceId)).toEqual(['ce_gus']);
    out.length = 0;
    await run('events rejected list', ['--workspace', workspaceId]);
    expect(out).toEqual(['0 rejections']);
  });

  it('through `npm run sluice`: lists from the control table the environment names', async () => {
    // Prepare
    const workspaceId = `ws_${randomUUID()}`;
    const rejected = new DynamoRejectedEvents(controlTable);
    await rejected.put({
      workspaceId,
      kind: 'envelope',
      reasons: ['workspaceId: required'],
      event: { id: randomUUID(), 'detail-type': 'sluice.events', time: new Date().toISOString(), detail: {} },
    });
    const cliPath = fileURLToPath(new URL('../main.ts', import.meta.url));

    // Act
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', cliPath, 'events', 'rejected', 'list', '--workspace', workspaceId],
      { env: process.env },
    );

    // Assess
    expect(stdout.trim().split('\n')).toEqual([
      expect.stringMatching(
        new RegExp(`^${workspaceId} \\d{13}#.*#envelope \\(envelope, sluice\\.events from no source`),
      ),
      '  workspaceId: required',
      '1 rejections',
    ]);
  });

  it('asks for --workspace with --id', async () => {
    const { run } = createCli(new DynamoRejectedEvents(controlTable));
    await expect(run('events rejected redrive', ['--id', 'x'])).rejects.toBeInstanceOf(UsageError);
  });

  function createCli(rejected: DynamoRejectedEvents) {
    const out: string[] = [];
    const err: string[] = [];
    const list = createDataCommands({
      out: (line) => out.push(line),
      err: (line) => err.push(line),
      writer: () => new EventLogWriter({ ...eventTables, logger, explicitRecordedAt: 'ignore' }),
      rejected: () => rejected,
      erasures: () => new ErasureLogStore(controlTable),
      config: testConfig,
    });
    const run = (name: string, args: string[]) => runCommands(list, [...name.split(' '), ...args]);
    return { run, out, err };
  }
});

describe('data commands', () => {
  it('are exported under their names', () => {
    // Every leaf command by its words, as `npm run sluice` selects it.
    const paths = (commands: readonly Command[], prefix: string[] = []): string[] =>
      commands.flatMap((c) =>
        c.commands.length > 0 ? paths(c.commands, [...prefix, c.name()]) : [[...prefix, c.name()].join(' ')],
      );
    expect(paths(createDataCommands())).toEqual([
      'events ingest',
      'events redrive',
      'events rejected list',
      'events rejected redrive',
      'subscribers upsert',
      'subscribers delete',
      'seed',
    ]);
  });

  it('events ingest writes the good lines, reports bad ones by line number, then fails', async () => {
    // Prepare
    const workspaceId = `ws_${randomUUID()}`;
    const now = Date.now();
    const event = (id: string, extra: Record<string, unknown> = {}) =>
      JSON.stringify({
        dataset: 'email_events',
        id,
        event_type: 'opened',
        occurred_at: new Date(now - 1000).toISOString(),
        email: 'ada@example.com',
        email_send_id: 'snd_1',
        message_type: 'campaign',
        ...extra,
      });
    const path = await file('events.jsonl', [
      event('e1'),
      '{not json',
      '',
      event('e2', { event_type: 'viewed' }),
      event('e3', { test: true }),
      event('e4', { recorded_at: new Date(now - 5 * 60_000).toISOString() }),
    ]);
    const { run, out, err } = cli();

    // Act
    const failure = run('events ingest', ['--workspace', workspaceId, '--file', path, '--json']).catch(
      (e) => e,
    );

    // Assess
    expect(await failure).toBeInstanceOf(Error);
    expect(((await failure) as Error).message).toContain('2 lines were refused');
    expect(JSON.parse(out[0]!)).toEqual({
      lines: 5,
      accepted: 2,
      duplicates: 0,
      dropped: { test: 1, history: 0, late: 0 },
      refusedBehindExport: 0,
      invalid: [
        { line: 2, reason: '(line): not valid JSON' },
        { line: 4, reason: expect.stringMatching(/^event_type: /) },
      ],
    });
    expect(err[0]).toBe('line 2: (line): not valid JSON');
    expect(err[1]).toMatch(/^line 4: event_type: /);
    const ids = (
      await readLines(
        new EventLogReader(eventTables).readWindow(workspaceId, 'email_events', now - 3_600_000, Date.now()),
      )
    ).map((line) => JSON.parse(line).id);
    expect(ids).toEqual(['e4', 'e1']);
  });

  it('events ingest refuses recorded_at at or behind any destination’s committed or planned position, per line', async () => {
    // Prepare: email_events committed through an hour ago by one destination, planned 10 minutes further by
    // another; nothing exported yet for custom_events.
    const workspaceId = `ws_${randomUUID()}`;
    const now = Date.now();
    const committed = now - 3_600_000;
    const planned = committed + 600_000;
    await putCursor(workspaceId, 'exp_a', 'email_events', { exportedThroughMs: committed });
    await putCursor(workspaceId, 'exp_b', 'email_events', {
      exportedThroughMs: committed - 3_600_000,
      planned: [{ fromMs: committed - 3_600_000, toMs: planned, runId: 'run_1' }],
    });
    const line = (id: string, dataset: string, recordedMs?: number) =>
      JSON.stringify({
        dataset,
        id,
        ...(dataset === 'custom_events' ? { event_name: 'x' } : { event_type: 'opened', email_send_id: 's' }),
        ...(dataset === 'email_events' ? { email: 'ada@example.com', message_type: 'campaign' } : {}),
        occurred_at: new Date(committed - 3_600_000).toISOString(),
        ...(recordedMs === undefined ? {} : { recorded_at: new Date(recordedMs).toISOString() }),
      });
    const path = await file('behind.jsonl', [
      line('behind_commit', 'email_events', committed - 60_000),
      line('at_plan', 'email_events', planned),
      line('after_plan', 'email_events', planned + 1),
      line('recorded_now', 'email_events'),
      line('custom_old', 'custom_events', committed - 60_000),
    ]);
    const { run, out, err, refusals } = cli();

    // Act
    const failure = await run('events ingest', ['--workspace', workspaceId, '--file', path, '--json']).catch(
      (e: Error) => e,
    );

    // Assess: two lines refused with the reason, counted, in the metric; the rest written.
    expect(failure).toBeInstanceOf(Error);
    const reason = `recorded_at: at or before ${new Date(planned).toISOString()}, which an export of this workspace has already reached for email_events`;
    expect(JSON.parse(out[0]!)).toMatchObject({
      lines: 5,
      accepted: 3,
      refusedBehindExport: 2,
      invalid: [
        { line: 1, reason: expect.stringContaining(reason) },
        { line: 2, reason: expect.stringContaining(reason) },
      ],
    });
    expect(err).toEqual([
      expect.stringMatching(/^line 1: recorded_at: /),
      expect.stringMatching(/^line 2: /),
    ]);
    expect(refusals).toEqual([{ workspaceId, dataset: 'email_events', count: 2 }]);
    const reader = new EventLogReader(eventTables);
    const ids = async (dataset: 'email_events' | 'custom_events') =>
      (await readLines(reader.readWindow(workspaceId, dataset, committed - 7_200_000, Date.now()))).map(
        (text) => JSON.parse(text).id,
      );
    expect(await ids('email_events')).toEqual(['after_plan', 'recorded_now']);
    expect(await ids('custom_events')).toEqual(['custom_old']);
  });

  it('events ingest prints a summary and succeeds when every line is good', async () => {
    const workspaceId = `ws_${randomUUID()}`;
    const path = await file('ok.jsonl', [
      JSON.stringify({
        dataset: 'custom_events',
        id: 'c1',
        event_name: 'x',
        occurred_at: new Date().toISOString(),
      }),
    ]);
    const { run, out, err } = cli();
    await run('events ingest', ['--workspace', workspaceId, '--file', path]);
    expect(out).toEqual([
      `Workspace ${workspaceId}: 1 lines, 1 events written, dropped 0 test, 0 history, 0 late, 0 refused`,
    ]);
    expect(err).toEqual([]);
  });

  it("events ingest of the second product's lines: recorded_at kept, and what it ignores or does not export counted", async () => {
    // Prepare: a message, its receipt, an older receipt (ignored), a change of an unknown message (refused), a
    // click on it (kept for the next status change), a project in progress and then complete twice, an opt-out.
    const workspaceId = `ws_${randomUUID()}`;
    const now = Date.now();
    const at = (minutesAgo: number) => new Date(now - minutesAgo * 60_000).toISOString();
    const change = (id: string, minutesAgo: number, fields: Record<string, unknown>) =>
      JSON.stringify({ dataset: 'message_events', message_id: id, updated_at: at(minutesAgo), ...fields });
    const project = (completed: boolean, minutesAgo: number) =>
      JSON.stringify({
        dataset: 'project_summary',
        project_id: 'prj_1',
        name: 'GOTV',
        completed_at: completed ? at(minutesAgo) : null,
        recorded_at: at(minutesAgo),
      });
    const path = await file('second.jsonl', [
      JSON.stringify({
        dataset: 'message_events',
        message_id: 'msg_1',
        conversation_id: 'cnv_1',
        direction: 'outbound',
        status: 'sent',
        from_phone_number: '471016',
        to_phone_number: '5555550123',
        media_url_count: 0,
        send_type: 'test',
        created_at: at(30),
        updated_at: at(30),
        recorded_at: at(30),
      }),
      change('msg_1', 20, { status: 'delivered', recorded_at: at(20) }),
      change('msg_1', 25, { status: 'failed', recorded_at: at(19) }),
      change('msg_9', 18, { status: 'delivered' }),
      change('msg_1', 17, { url_click_count: 1, recorded_at: at(17) }),
      project(false, 16),
      project(true, 15),
      project(true, 14),
      JSON.stringify({
        dataset: 'opt_out_events',
        opt_out_id: 'opt_1',
        phone_number: '5555550123',
        created_at: at(13),
        recorded_at: at(13),
      }),
    ]);
    const { run, out } = cli();

    // Act
    const failure = await run('events ingest', ['--workspace', workspaceId, '--file', path, '--json']).catch(
      (e) => e,
    );

    // Assess: every line accounted for: written, refused, or counted as not exported.
    expect(failure).toBeInstanceOf(Error);
    expect(JSON.parse(out[0]!)).toEqual({
      lines: 9,
      accepted: 5,
      duplicates: 0,
      dropped: { test: 0, history: 0, late: 0 },
      refusedBehindExport: 0,
      invalid: [
        { line: 4, reason: expect.stringMatching(/message_id: no message with this id was received/) },
      ],
      currentRows: { emitted: 3, kept: 1, outOfOrder: 1, notComplete: 1, afterCompletion: 1 },
    });
    const reader = new EventLogReader(eventTables);
    const recorded = async (dataset: EventDataset) =>
      (await readLines(reader.readWindow(workspaceId, dataset, now - 3_600_000, now))).map(
        (line) => JSON.parse(line).recorded_at,
      );
    expect(await recorded('message_events')).toEqual([at(30), at(20)]);
    expect(await recorded('project_summary')).toEqual([at(15)]);
    expect(await recorded('opt_out_events')).toEqual([at(13)]);
  });

  it('subscribers upsert and delete', async () => {
    const workspaceId = `ws_${randomUUID()}`;
    const row = (id: string) =>
      JSON.stringify({
        id,
        status: 'active',
        created_at: '2026-01-01T00:00:00Z',
        updated_at: '2026-01-01T00:00:00Z',
      });
    const path = await file('subs.jsonl', [row('s1'), row('s2'), row('s3'), '{"id":"s4"}']);
    const { run, out } = cli();

    await expect(
      run('subscribers upsert', ['--workspace', workspaceId, '--file', path, '--json']),
    ).rejects.toThrow('1 lines were refused');
    await run('subscribers delete', ['--workspace', workspaceId, '--ids', 's1, s3']);

    expect(JSON.parse(out[0]!)).toMatchObject({ lines: 4, accepted: 3, invalid: [{ line: 4 }] });
    expect(out[1]).toBe(`Workspace ${workspaceId}: 2 subscribers deleted, 0 refused`);
    const ids = (await readLines(new EventLogReader(eventTables).readSubscribers(workspaceId))).map(
      (l) => JSON.parse(l).id,
    );
    expect(ids).toEqual(['s2']);
  });

  it('seed writes generated events recorded now, and subscribers', async () => {
    const workspaceId = `ws_${randomUUID()}`;
    const before = Date.now();
    const { run, out } = cli();

    await run('seed', [
      '--workspace',
      workspaceId,
      '--events',
      '300',
      '--subscribers',
      '25',
      '--seed',
      '5',
      '--json',
    ]);

    const summary = JSON.parse(out[0]!);
    expect(summary).toMatchObject({
      workspaceId,
      seed: 5,
      events: 300,
      subscribers: 25,
      dropped: 0,
      invalid: 0,
    });
    const reader = new EventLogReader(eventTables);
    let total = 0;
    for (const dataset of ['email_events', 'sms_events', 'custom_events'] as const) {
      const count = await reader.countWindow(workspaceId, dataset, before - 1, Date.now());
      expect(count).toBe(summary.byDataset[dataset]);
      total += count;
    }
    expect(total).toBe(300);
    expect(await readLines(reader.readSubscribers(workspaceId))).toHaveLength(25);
  });

  it('seed --datasets generates --events rows per dataset named, of the second product too', async () => {
    // Prepare
    const workspaceId = `ws_${randomUUID()}`;
    const before = Date.now();
    const { run, out } = cli();

    // Act
    await run('seed', [
      '--workspace',
      workspaceId,
      '--events',
      '40',
      '--datasets',
      'sms_events,click_events,opt_out_events,message_events,project_summary',
      '--seed',
      '7',
      '--json',
    ]);

    // Assess: each dataset its rows (messages: 40 and the receipts that came within the hour), none refused;
    // every status change is a row of its own in the log (the writer keeps a message's last one per window)
    const summary = JSON.parse(out[0]!);
    expect(summary).toMatchObject({ workspaceId, dropped: 0, invalid: 0 });
    expect(summary.byDataset).toMatchObject({
      sms_events: 40,
      click_events: 40,
      opt_out_events: 40,
      project_summary: 40,
    });
    expect(summary.byDataset.message_events).toBeGreaterThan(40);
    const reader = new EventLogReader(eventTables);
    for (const dataset of Object.keys(summary.byDataset) as EventDataset[]) {
      expect(await reader.countWindow(workspaceId, dataset, before - 1, Date.now()), dataset).toBe(
        summary.byDataset[dataset],
      );
    }
    await expect(
      run('seed', ['--workspace', workspaceId, '--events', '1', '--datasets', 'sms,clicks']),
    ).rejects.toThrow(/--datasets: unknown sms, clicks/);
  });

  it('seed on a terminal draws a progress bar on its progress stream; --json output stays one line', async () => {
    // Prepare
    const workspaceId = `ws_${randomUUID()}`;
    const { run, out, err, progress } = cli(undefined, { isTTY: true });

    // Act
    await run('seed', ['--workspace', workspaceId, '--events', '2500', '--seed', '3', '--json']);

    // Assess
    expect(out).toHaveLength(1);
    expect(JSON.parse(out[0]!)).toMatchObject({ workspaceId, events: 2500 });
    expect(err).toEqual([]);
    const last = progress.at(-1)!;
    expect(last.startsWith('\r\x1b[2K')).toBe(true);
    expect(last.slice(5)).toMatch(/^\[#{24}\] 2,500 of 2,500 events \(100%\), [\d,]+ rows\/s in \d+s\n$/);
    expect(progress.every((text) => text.startsWith('\r\x1b[2K'))).toBe(true);
  });

  it('seed --since spreads recorded times from then to now', async () => {
    const workspaceId = `ws_${randomUUID()}`;
    const now = Date.parse('2026-10-01T00:30:00.000Z');
    const { run, out } = cli(() => now);

    await run('seed', [
      '--workspace',
      workspaceId,
      '--events',
      '200',
      '--since',
      '2026-09-30T23:30:00Z',
      '--seed',
      '1',
    ]);

    expect(out[0]).toMatch(/^Seeded workspace .* \(seed 1\): 200 events/);
    // Recorded further back than the retention: read at the CLI's clock, or the rows count as expired.
    const reader = new EventLogReader({ ...eventTables, now: () => now });
    const midnight = Date.parse('2026-10-01T00:00:00.000Z');
    const count = async (from: number, to: number) =>
      (await reader.countWindow(workspaceId, 'email_events', from, to)) +
      (await reader.countWindow(workspaceId, 'sms_events', from, to)) +
      (await reader.countWindow(workspaceId, 'custom_events', from, to));
    expect(await count(midnight - 3_600_000, now)).toBe(200);
    expect(await count(midnight - 3_600_000, midnight)).toBeGreaterThan(80);
    expect(await count(midnight, now)).toBeGreaterThan(80);
  });

  it('seed --since 1h records the events from an hour before now to now', async () => {
    // Prepare
    const workspaceId = `ws_${randomUUID()}`;
    const now = Date.now();
    const { run, out } = cli(() => now);
    // Act
    await run('seed', [
      '--workspace',
      workspaceId,
      '--events',
      '100',
      '--since',
      '1h',
      '--seed',
      '2',
      '--json',
    ]);
    // Assess
    expect(JSON.parse(out[0]!).recorded).toEqual({
      from: new Date(now - 3_600_000).toISOString(),
      to: new Date(now).toISOString(),
    });
    const reader = new EventLogReader({ ...eventTables, now: () => now });
    let older = 0;
    for (const dataset of ['email_events', 'sms_events', 'custom_events'] as const)
      older += await reader.countWindow(workspaceId, dataset, now - 3_600_000, now - 600_000);
    expect(older).toBeGreaterThan(50);
  });

  it('seed --since refuses the events at or behind an export’s position, counts them and fails', async () => {
    // Prepare: every event dataset exported through 30 minutes ago.
    const workspaceId = `ws_${randomUUID()}`;
    const now = Date.now();
    const position = now - 1_800_000;
    for (const dataset of ['email_events', 'sms_events', 'custom_events'])
      await putCursor(workspaceId, 'exp_a', dataset, { exportedThroughMs: position });
    const { run, out, refusals } = cli(() => now);

    // Act
    const failure = await run('seed', [
      '--workspace',
      workspaceId,
      '--events',
      '200',
      '--since',
      new Date(now - 3_600_000).toISOString(),
      '--seed',
      '3',
      '--json',
    ]).catch((e: Error) => e);

    // Assess
    expect((failure as Error).message).toMatch(
      /events were refused: recorded at or behind an export's position/,
    );
    const summary = JSON.parse(out[0]!);
    expect(summary.refusedBehindExport).toBeGreaterThan(50);
    expect(summary.events + summary.refusedBehindExport).toBe(200);
    expect(summary.invalid).toBe(0);
    expect(refusals.reduce((sum, r) => sum + r.count, 0)).toBe(summary.refusedBehindExport);
    const reader = new EventLogReader({ ...eventTables, now: () => now });
    let behind = 0;
    let ahead = 0;
    for (const dataset of ['email_events', 'sms_events', 'custom_events'] as const) {
      behind += await reader.countWindow(workspaceId, dataset, now - 7_200_000, position);
      ahead += await reader.countWindow(workspaceId, dataset, position, now);
    }
    expect(behind).toBe(0);
    expect(ahead).toBe(summary.events);
  });

  it('refuses bad invocations as usage errors', async () => {
    const { run } = cli();
    await expect(run('seed', ['--workspace', 'w'])).rejects.toBeInstanceOf(UsageError);
    await expect(run('seed', ['--workspace', 'w', '--events', 'many'])).rejects.toBeInstanceOf(UsageError);
    await expect(
      run('seed', ['--workspace', 'w', '--events', '1', '--since', 'later']),
    ).rejects.toBeInstanceOf(UsageError);
    await expect(run('events ingest', ['--file', 'x'])).rejects.toBeInstanceOf(UsageError);
    await expect(run('subscribers upsert', ['--workspace', 'w'])).rejects.toBeInstanceOf(UsageError);
  });

  it('through `npm run sluice`: stdout holds only the JSON, refusals go to stderr, exit code 1', async () => {
    // Prepare
    const workspaceId = `ws_${randomUUID()}`;
    const path = await file('process.jsonl', [
      JSON.stringify({
        dataset: 'custom_events',
        id: 'p1',
        event_name: 'x',
        occurred_at: new Date().toISOString(),
      }),
      JSON.stringify({ dataset: 'custom_events', id: 'p2', occurred_at: new Date().toISOString() }),
    ]);
    const cliPath = fileURLToPath(new URL('../main.ts', import.meta.url));

    // Act
    const outcome = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', cliPath, 'events', 'ingest', '--workspace', workspaceId, '--file', path, '--json'],
      {
        env: {
          ...process.env,
          SLUICE_CONTROL_TABLE: process.env.SLUICE_CONTROL_TABLE ?? 'unused',
          // Even a debugging operator's log level must not put log lines in the JSON output.
          POWERTOOLS_LOG_LEVEL: 'DEBUG',
        },
      },
    ).then(
      () => ({ code: 0, stdout: '', stderr: '' }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    );

    // Assess
    expect(outcome.code).toBe(1);
    const stdout = outcome.stdout.trim().split('\n');
    expect(stdout).toHaveLength(1);
    expect(JSON.parse(stdout[0]!)).toMatchObject({ accepted: 1, invalid: [{ line: 2 }] });
    expect(outcome.stderr).toMatch(/line 2: event_name: /);
    // Not a terminal: the progress is a plain line on stderr.
    expect(outcome.stderr).toMatch(/^2 lines \(100%\), [\d,]+ rows\/s in \d+s$/m);
    expect(outcome.stderr).not.toContain('\r');
  });
});
