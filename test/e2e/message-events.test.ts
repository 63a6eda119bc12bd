import type { IngestResult } from '@sluice/eventlog';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalWorkflows } from '@sluice/devstack';
import { openParquetReader, type ParquetReader } from '../helpers/parquet.js';
import { createLocalExport, type E2eHarness, manualRunInput, startE2eHarness } from './harness.js';

/**
 * The current-row datasets end to end (docs/internals.md, "Current-row datasets"): messages and projects
 * ingested as whole rows and changes over three hours, exported by the synthesized ExportRun as Parquet into
 * s3rver, read back with DuckDB as a warehouse would: the greatest `updated_at` per `message_id` gives each
 * message's latest status, every window holds at most one row per message, and a project is exported once.
 */

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
/** Three whole hours, ended well before now (the export's lag). */
const H0 = Math.floor(Date.now() / HOUR) * HOUR - 4 * HOUR;
const iso = (ms: number) => new Date(ms).toISOString();

let h: E2eHarness;
let workflows: LocalWorkflows;
let reader: ParquetReader;

const message = (id: string, status: string, atMs: number, extra: Record<string, unknown> = {}) => ({
  dataset: 'message_events',
  message_id: id,
  conversation_id: `conv_${id}`,
  project_id: 'p1',
  project_name: 'GOTV',
  direction: 'outbound',
  status,
  from_phone_number: '471016',
  to_phone_number: '5555550123',
  media_url_count: 0,
  send_type: 'test',
  contact_id: `contact_${id}`,
  created_at: iso(atMs),
  updated_at: iso(atMs),
  recorded_at: atMs,
  ...extra,
});
const change = (id: string, atMs: number, fields: Record<string, unknown>) => ({
  dataset: 'message_events',
  message_id: id,
  updated_at: iso(atMs),
  recorded_at: atMs,
  ...fields,
});
const project = (status: string, atMs: number, completed: boolean) => ({
  dataset: 'project_summary',
  project_id: 'p1',
  name: 'GOTV',
  status,
  completed_at: completed ? iso(atMs) : null,
  created_at: iso(H0),
  recorded_at: atMs,
});

beforeAll(async () => {
  h = await startE2eHarness();
  workflows = await h.workflows();
  reader = await openParquetReader();
}, 300_000);

afterAll(async () => {
  await reader?.close();
  expect(await h.close()).toEqual([]);
});

describe('message_events and project_summary on the local runtime', () => {
  it('exports each status change once per window; DuckDB keeps the greatest updated_at per message_id', async () => {
    const ws = h.ws.workspaceId;
    const at = (hour: number, minute: number) => H0 + hour * HOUR + minute * MINUTE;
    const inputs = [
      // Hour 0: three messages queued; m1 sent (the window keeps its last row), a click on m2 (kept, not emitted).
      message('m1', 'queued', at(0, 1)),
      message('m2', 'queued', at(0, 2)),
      message('m3', 'queued', at(0, 3)),
      change('m1', at(0, 10), { status: 'sent', sent_at: iso(at(0, 10)) }),
      change('m2', at(0, 20), { url_click_count: 1, url_clicked_at: iso(at(0, 20)) }),
      project('in_progress', at(0, 30), false),
      // Hour 1: m1's receipt; m2 sent (carrying its click); a receipt for m3 older than its row: ignored.
      change('m1', at(1, 5), { status: 'delivered', delivered_at: iso(at(1, 5)) }),
      change('m2', at(1, 6), { status: 'sent' }),
      change('m3', at(0, 0), { status: 'failed' }),
      project('completed', at(1, 30), true),
      // Hour 2: a second click on m2 only (kept), m3 fails; the project is sent again after completion.
      change('m2', at(2, 1), { url_click_count: 2 }),
      change('m3', at(2, 2), { status: 'failed', failed_at: iso(at(2, 2)), error_code: '40300' }),
      project('completed', at(2, 30), true),
    ];
    // Recorded in order, one call per input, as a producer's stream would arrive.
    const results: IngestResult[] = [];
    for (const input of inputs) results.push(await h.events.ingestEvents(ws, [input]));
    expect(results.flatMap((result) => result.invalid)).toEqual([]);
    const total = (name: 'emitted' | 'kept' | 'outOfOrder' | 'notComplete' | 'afterCompletion') =>
      results.reduce((sum, result) => sum + (result.currentRows?.[name] ?? 0), 0);
    expect([total('emitted'), total('kept'), total('outOfOrder')]).toEqual([7 + 1, 2, 1]);
    expect([total('notComplete'), total('afterCompletion')]).toEqual([1, 1]);
    // A change for a message Sluice never received is refused with its reason.
    const unknown = await h.events.ingestEvents(ws, [change('m9', at(2, 40), { status: 'sent' })]);
    expect(unknown.invalid[0]?.reason).toMatch(/message_id: no message with this id was received/);

    const { id, prefix } = await createLocalExport(h, {
      prefixRoot: 'e2e-messages/',
      startFromMs: H0 - 1,
      datasets: ['message_events', 'project_summary'],
      frequency: 'hourly',
      fileFormat: { format: 'parquet' },
    });
    const outcome = await workflows.runExportRun(manualRunInput(h, id));
    expect(outcome.status).toBe('succeeded');

    const keys = (await h.list(prefix)).map((object) => object.key).filter((key) => key.endsWith('.parquet'));
    const paths = async (dataset: string) => {
      const out: string[] = [];
      for (const key of keys.filter((k) => k.includes(dataset)))
        out.push(await reader.put(key.slice(prefix.length), await h.readBytes(key)));
      return out;
    };
    const list = (files: string[]) => `[${files.map((file) => `'${file}'`).join(', ')}]`;
    const messageFiles = await paths('message_events');
    expect(messageFiles).toHaveLength(3);

    // A warehouse's dedupe: the greatest updated_at per message_id gives each message's latest status.
    const latest = await reader.query(
      `SELECT message_id, status, url_click_count::INTEGER AS clicks, error_code FROM read_parquet(${list(messageFiles)})
       QUALIFY row_number() OVER (PARTITION BY message_id ORDER BY updated_at DESC) = 1 ORDER BY message_id`,
    );
    expect(latest).toEqual([
      { message_id: 'm1', status: 'delivered', clicks: null, error_code: null },
      { message_id: 'm2', status: 'sent', clicks: 1, error_code: null },
      { message_id: 'm3', status: 'failed', clicks: null, error_code: '300' },
    ]);

    // Each window's file: at most one row per message, its state at the window's end.
    const perFile = await reader.query(
      `SELECT filename, message_id, status FROM read_parquet(${list(messageFiles)}, filename = true) ORDER BY filename, message_id`,
    );
    const byFile = new Map<string, string[]>();
    for (const row of perFile) {
      const name = String(row.filename);
      byFile.set(name, [...(byFile.get(name) ?? []), `${String(row.message_id)}:${String(row.status)}`]);
    }
    expect([...byFile.values()].sort()).toEqual([
      ['m1:delivered', 'm2:sent'],
      ['m1:sent', 'm2:queued', 'm3:queued'],
      ['m3:failed'],
    ]);
    const types = await reader.describe(messageFiles[0] as string);
    expect(types.find((column) => column.name === 'updated_at')?.type).toBe('TIMESTAMP WITH TIME ZONE');
    expect(types.map((column) => column.name)).not.toContain('recorded_at');

    // The project: one row, in the window of its completion.
    const projectFiles = await paths('project_summary');
    expect(projectFiles).toHaveLength(1);
    expect(await reader.query(`SELECT project_id, status FROM read_parquet(${list(projectFiles)})`)).toEqual([
      { project_id: 'p1', status: 'completed' },
    ]);
  }, 300_000);
});
