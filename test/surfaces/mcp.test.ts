import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_S3_CREDENTIALS } from '@sluice/devstack';
import { putRunRecord } from '../helpers/seed-runs.js';
import { OrganizationStore } from '@sluice/control';
import {
  type ContractHarness,
  startContractHarness,
  type TestWorkspace,
  uniqueId,
} from '../helpers/contract-harness.js';
import { controlTable } from '../helpers/tables.js';

let harness: ContractHarness;
let ws: TestWorkspace;
let client: Client;
let serverLog = '';

beforeAll(async () => {
  harness = await startContractHarness();
  ws = await harness.newWorkspace();
  // `sluice mcp` as an MCP client would start it: its own process, the connection in its environment.
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--import', 'tsx', 'packages/cli/src/main.ts', 'mcp'],
    env: {
      PATH: process.env.PATH ?? '',
      SLUICE_API_URL: `${harness.url}/api/v1`,
      SLUICE_API_KEY: ws.client.apiKey!,
    },
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (chunk) => {
    serverLog += chunk;
  });
  client = new Client({ name: 'sluice-test', version: '1.0.0' });
  await client.connect(transport);
});

afterAll(async () => {
  await client?.close();
  expect(await harness.closeAndFindLeaks()).toEqual([]);
  expect(serverLog).not.toContain(LOCAL_S3_CREDENTIALS.secretAccessKey);
});

/** The text parts of a tool result. */
function texts(result: CallToolResult): string[] {
  return result.content.flatMap((part) => (part.type === 'text' ? [part.text] : []));
}

/** The API's JSON a tool returned (its first text part). */
function apiJson(result: CallToolResult): Record<string, unknown> {
  return JSON.parse(texts(result)[0]!);
}

async function callTool(name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

describe('sluice mcp over stdio, against the local API', () => {
  it('lists one tool per operation, input schemas from the API validation, destructive ones marked', async () => {
    // Act
    const { tools } = await client.listTools();

    // Assess
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    expect([...byName.keys()].sort()).toEqual([
      'cancel_backfill',
      'create_backfill',
      'create_data_export',
      'delete_data_export',
      'get_backfill',
      'get_data_export',
      'list_backfills',
      'list_child_organizations',
      'list_data_export_runs',
      'list_data_exports',
      'retry_backfill',
      'run_data_export',
      'test_data_export',
      'update_data_export',
    ]);
    const create = byName.get('create_data_export')!;
    // The credentials are one of two ways (a key pair, or roleArn): the API checks which, so none is required.
    expect([...(create.inputSchema.required ?? [])].sort()).toEqual(['bucket', 'name', 'provider']);
    // The MCP server never asks for a secret: no access key in create or update (issue 28).
    expect(create.inputSchema.properties).not.toHaveProperty('secretAccessKey');
    expect(create.inputSchema.properties).not.toHaveProperty('accessKeyId');
    expect(byName.get('update_data_export')!.inputSchema.properties).not.toHaveProperty('secretAccessKey');
    expect(create.inputSchema.properties).toMatchObject({
      roleArn: { type: 'string' },
      provider: { enum: ['s3', 'gcs'] },
      datasets: {
        type: 'array',
        minItems: 1,
        items: { enum: expect.arrayContaining(['email_events', 'subscribers']) },
      },
      frequency: { enum: expect.arrayContaining(['every_5_minutes', 'daily']) },
      format: { enum: ['jsonl', 'parquet'] },
      compression: { enum: ['gzip', 'snappy', 'zstd'] },
    });
    expect(create.description).toMatch(/^Create data export\. Adds an S3/);
    expect(byName.get('update_data_export')!.inputSchema.required).toEqual(['id']);
    expect(byName.get('update_data_export')!.inputSchema.properties).toHaveProperty('isEnabled');
    expect(byName.get('update_data_export')!.inputSchema.properties).toHaveProperty('format');
    expect(byName.get('list_data_export_runs')!.inputSchema.properties).toMatchObject({
      limit: { type: 'integer', minimum: 1, maximum: 100 },
    });
    expect(byName.get('delete_data_export')!.annotations).toMatchObject({ destructiveHint: true });
    expect(byName.get('update_data_export')!.annotations).toMatchObject({ destructiveHint: true });
    expect(create.inputSchema.properties).toMatchObject({
      childOrganizations: {
        type: 'array',
        items: { type: 'string' },
        description: expect.stringContaining('["*"]'),
      },
    });
    expect(byName.get('update_data_export')!.inputSchema.properties).toHaveProperty('childOrganizations');
    for (const name of [
      'list_data_exports',
      'get_data_export',
      'list_data_export_runs',
      'list_child_organizations',
    ]) {
      expect(byName.get(name)!.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
    }
    for (const name of ['create_data_export', 'run_data_export', 'test_data_export']) {
      expect(byName.get(name)!.annotations).toMatchObject({ destructiveHint: false });
    }
  });

  it('creates an export, reads it back, updates, runs, lists runs and deletes it, with the API JSON as results', async () => {
    // Act
    // The key is the customer's: created over the API (or the CLI, the secret on stdin), never through a model.
    const body = harness.createBody({ datasets: ['email_events', 'sms_events'], frequency: 'hourly' });
    const created = await ws.client.post('/data-exports', body);

    // Assess
    expect(created.status).toBe(201);
    const view = created.body.dataExport as unknown as Record<string, unknown>;
    expect(view).toMatchObject({
      name: 'Analytics lake',
      datasets: ['email_events', 'sms_events'],
      frequency: 'hourly',
    });
    const id = view.id as string;
    const got = await callTool('get_data_export', { id });
    expect(apiJson(got)).toEqual({
      success: true,
      dataExport: expect.objectContaining({ id, accessKeyId: 'S3…' }),
    });
    const listed = apiJson(await callTool('list_data_exports'));
    expect((listed.dataExports as { id: string }[]).map((item) => item.id)).toContain(id);
    const updated = apiJson(await callTool('update_data_export', { id, isEnabled: false, name: 'Renamed' }));
    expect(updated.dataExport).toMatchObject({ name: 'Renamed', isEnabled: false });
    const refused = await callTool('run_data_export', { id });
    expect(refused.isError).toBe(true);
    expect(texts(refused)[0]).toMatch(/\(HTTP 409, destination_disabled\)/);
    await callTool('update_data_export', { id, isEnabled: true });
    // The create queued the first run already: no second one starts.
    expect(apiJson(await callTool('run_data_export', { id }))).toMatchObject({
      success: true,
      queued: false,
      dataExport: { id, status: 'queued' },
    });
    expect(apiJson(await callTool('test_data_export', { id }))).toMatchObject({ success: true });
    expect(apiJson(await callTool('list_data_export_runs', { id, limit: 5 }))).toEqual({
      success: true,
      runs: [],
    });
    expect(apiJson(await callTool('delete_data_export', { id }))).toEqual({
      success: true,
      dataExportId: id,
    });
    const gone = await callTool('get_data_export', { id });
    expect(gone.isError).toBe(true);
    expect(texts(gone)[0]).toMatch(/HTTP 404, not_found/);
  });

  it('lists the child organizations and sets and shows childOrganizations on update, refusing one that is not a child', async () => {
    // Prepare: a child of the workspace, and an export
    const child = uniqueId('ws_');
    await harness.store.ensureWorkspace(child);
    await new OrganizationStore(controlTable).link(ws.workspaceId, child);
    const created = await ws.client.post('/data-exports', harness.createBody());
    const id = created.body.dataExport!.id;

    // Act
    const children = apiJson(await callTool('list_child_organizations'));
    const updated = apiJson(await callTool('update_data_export', { id, childOrganizations: [child] }));
    const got = apiJson(await callTool('get_data_export', { id }));
    const refused = await callTool('update_data_export', { id, childOrganizations: ['ws_not_a_child'] });

    // Assess
    expect(children).toEqual({
      success: true,
      children: [{ workspaceId: child, linkedAt: expect.any(String) }],
    });
    expect(updated.dataExport).toMatchObject({ childOrganizations: [child] });
    expect(got.dataExport).toMatchObject({ childOrganizations: [child] });
    expect(refused.isError).toBe(true);
    expect(texts(refused)[0]).toContain(
      '- childOrganizations[0]: Workspace "ws_not_a_child" is not a child organization of this workspace.',
    );
  });

  it('never takes a secret: create or update with an access key is a tool error, and nothing reaches the API', async () => {
    // Prepare
    const before = (await ws.client.get('/data-exports')).body.dataExports as unknown[];
    const existing = (await ws.client.post('/data-exports', harness.createBody())).body as {
      dataExport: { id: string };
    };

    // Act
    const create = await callTool('create_data_export', harness.createBody({ name: 'Through a model' }));
    const update = await callTool('update_data_export', {
      id: existing.dataExport.id,
      accessKeyId: LOCAL_S3_CREDENTIALS.accessKeyId,
      secretAccessKey: LOCAL_S3_CREDENTIALS.secretAccessKey,
    });

    // Assess
    for (const result of [create, update]) {
      expect(result.isError).toBe(true);
      expect(texts(result)[0]).toMatch(/takes no access key or secret.*roleArn.*--secret-access-key-stdin/);
      expect(JSON.stringify(result)).not.toContain(LOCAL_S3_CREDENTIALS.secretAccessKey);
    }
    const after = (await ws.client.get('/data-exports')).body.dataExports as { name: string }[];
    expect(after).toHaveLength(before.length + 1);
    expect(after.map((view) => view.name)).not.toContain('Through a model');
  });

  it("returns the API's validation error as a tool error, with the message and each field issue", async () => {
    // Act: values that pass the schema but not the API's checks, and an unknown field
    const {
      accessKeyId: _id,
      secretAccessKey: _secret,
      ...keyless
    } = harness.createBody({
      bucket: 's3://acme-exports',
      pathPrefix: '../up',
      colour: 'blue',
    });
    const result = await callTool('create_data_export', {
      ...keyless,
      roleArn: 'arn:aws:iam::111122223333:role/sluice-exports',
    });

    // Assess
    expect(result.isError).toBe(true);
    const [summary, json] = texts(result);
    expect(summary).toMatch(/\(HTTP 400, invalid_input\)/);
    expect(summary).toMatch(/^- bucket: Bucket name, not a URL/m);
    expect(summary).toMatch(/^- pathPrefix: Path prefix cannot contain \. or \.\. segments\.$/m);
    expect(summary).toMatch(/^- colour: Unknown field "colour"\.$/m);
    expect(JSON.parse(json!)).toMatchObject({
      success: false,
      code: 'invalid_input',
      issues: expect.any(Array),
    });
    expect(JSON.stringify(result)).not.toContain(LOCAL_S3_CREDENTIALS.secretAccessKey);
  });

  it('creates, lists, gets and cancels a backfill, and refuses to retry one that did not fail; a range over 7 days is a tool error with the field issue', async () => {
    // Prepare
    const created = (await ws.client.post('/data-exports', harness.createBody({ frequency: 'hourly' })))
      .body as { dataExport: { id: string } };
    const id = created.dataExport.id;
    const now = Date.now();

    // Act
    type One = { backfill: { id: string; status: string; progress: Record<string, unknown> } };
    const queued = apiJson(
      await callTool('create_backfill', {
        id,
        datasets: ['email_events'],
        from: new Date(now - 3 * 3_600_000).toISOString(),
        to: new Date(now - 3_600_000).toISOString(),
      }),
    ) as One;
    const backfillId = queued.backfill.id as string;
    const listed = apiJson(await callTool('list_backfills', { id })) as { backfills: { id: string }[] };
    const got = apiJson(await callTool('get_backfill', { id, backfillId })) as One;
    const cancelled = apiJson(await callTool('cancel_backfill', { id, backfillId })) as One;
    const notFailed = await callTool('retry_backfill', { id, backfillId });
    const tooLong = await callTool('create_backfill', {
      id,
      from: new Date(now - 9 * 86_400_000).toISOString(),
      to: new Date(now - 3_600_000).toISOString(),
    });

    // Assess
    expect(queued.backfill).toMatchObject({ status: 'queued', datasets: ['email_events'] });
    expect(listed.backfills.map((b) => b.id)).toEqual([backfillId]);
    expect(got.backfill.progress.email_events).toMatchObject({ windowsDone: 0, rows: 0 });
    expect(cancelled.backfill.status).toBe('cancelled');
    expect(notFailed.isError).toBe(true);
    expect((notFailed.content[0] as { text: string }).text).toMatch(/\(HTTP 409, backfill_not_failed\)/);
    expect(tooLong.isError).toBe(true);
    expect((tooLong.content[0] as { text: string }).text).toMatch(/- to: A backfill covers at most 7 days/);
  });

  it('gives instructions, a description for every input field, and structured results with ISO times beside epoch ms', async () => {
    // Prepare: an export with a run whose stats carry epoch milliseconds
    const created = (await ws.client.post('/data-exports', harness.createBody())).body as {
      dataExport: { id: string };
    };
    const id = created.dataExport.id;
    const fromMs = Date.parse('2026-12-04T18:00:00.000Z');
    await putRunRecord(ws.workspaceId, id, {
      id: 'run_mcp',
      status: 'succeeded',
      rowCount: 10,
      stats: { email_events: { rows: 10, files: 1, bytes: 100, fromMs, toMs: fromMs + 300_000 } },
    });

    // Act
    const instructions = client.getInstructions();
    const { tools } = await client.listTools();
    const runs = await callTool('list_data_export_runs', { id });

    // Assess
    expect(instructions).toMatch(/^Sluice exports/);
    expect(instructions).toContain('Never ask the user for a bucket secret');
    const undescribed = tools.flatMap((tool) =>
      Object.entries(tool.inputSchema.properties ?? {}).flatMap(([field, schema]) =>
        (schema as { description?: string }).description ? [] : [`${tool.name}.${field}`],
      ),
    );
    expect(undescribed).toEqual([]);
    const backfill = tools.find((tool) => tool.name === 'create_backfill')!;
    expect(backfill.inputSchema.properties?.from).toMatchObject({
      description: expect.stringContaining('"earliest" for the whole history'),
    });
    expect(runs.structuredContent).toEqual(apiJson(runs));
    expect(apiJson(runs)).toMatchObject({
      runs: [
        {
          id: 'run_mcp',
          stats: {
            email_events: {
              fromMs,
              from: '2026-12-04T18:00:00.000Z',
              toMs: fromMs + 300_000,
              to: '2026-12-04T18:05:00.000Z',
            },
          },
        },
      ],
    });
    await callTool('delete_data_export', { id });
  });

  it('refuses a malformed id before any request: cancel_backfill {id, backfillId: ".."} leaves the export', async () => {
    // Prepare
    const created = (await ws.client.post('/data-exports', harness.createBody())).body as {
      dataExport: { id: string };
    };
    const id = created.dataExport.id;

    // Act
    const dots = await callTool('cancel_backfill', { id, backfillId: '..' });
    const encoded = await callTool('get_backfill', { id, backfillId: '%2e%2e' });
    const badExport = await callTool('delete_data_export', { id: `${id}/` });
    const traversal = await callTool('get_data_export', { id: '..' });

    // Assess
    for (const result of [dots, encoded, badExport, traversal]) {
      expect(result.isError).toBe(true);
    }
    expect(texts(dots).join('\n')).toContain('Not a backfill id');
    expect(texts(badExport).join('\n')).toContain('Not a data export id');
    expect(apiJson(await callTool('get_data_export', { id }))).toMatchObject({ dataExport: { id } });
  });
});
