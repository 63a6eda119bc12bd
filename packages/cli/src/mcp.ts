/**
 * `sluice mcp`: an MCP server on stdio, one tool per operation of the Data Exports API. Tool input schemas are
 * the zod schemas the API validates request bodies with (stage 1 of `@sluice/api` validation), plus `id`;
 * descriptions are the operations' own in the OpenAPI document. Every tool calls the HTTP API: results are
 * the API's JSON (as text and as structured content, with ISO times beside epoch milliseconds), API errors come
 * back as tool errors (`isError`) with the message and each field issue. Every input field has a description
 * (the OpenAPI document's), and the server gives instructions ({@link MCP_INSTRUCTIONS}).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { CallToolResult, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import {
  createBackfillRequestSchema,
  createRequestSchema,
  RUNS_LIMIT,
  openapiDocument,
  updateRequestSchema,
} from '@sluice/api';
import { BACKFILL_ID_RE, DESTINATION_ID_RE } from '@sluice/core';
import { z } from 'zod';
import { ApiError, ApiUnreachableError, DataExportsClient } from './api-client.js';
import type { Connection } from './connection.js';
import { UsageError } from './context.js';

const VERSION = '0.1.0';

/** `summary. description` of an operation of the OpenAPI document. */
export function operationDescription(operationId: string): string {
  for (const pathItem of Object.values(openapiDocument.paths as Record<string, Record<string, unknown>>)) {
    for (const operation of Object.values(pathItem)) {
      const { operationId: found, summary, description } = operation as Record<string, unknown>;
      if (found === operationId) return [summary, description].filter(Boolean).join('. ');
    }
  }
  throw new Error(`No operation ${operationId} in the OpenAPI document`);
}

const idShape = {
  id: z
    .string()
    .regex(DESTINATION_ID_RE, 'Not a data export id: one looks like exp_0123456789abcdef01234567.')
    .describe('The data export id, such as exp_0123456789abcdef01234567'),
};

/** What the server tells a model about its tools, once, when it connects. */
export const MCP_INSTRUCTIONS = [
  "Sluice exports a messaging platform's data (email_events, sms_events, custom_events, and a daily subscribers",
  "snapshot) into the user's own bucket (Amazon S3, Google Cloud Storage, S3-compatible) as files in date= folders.",
  'Start with list_data_exports. create_data_export tests the bucket first (a failure is a tool error saying what',
  'to fix) and queues the first run at once; runs then follow the frequency. Never ask the user for a bucket',
  'secret in the conversation: secrets belong in the CLI (standard input) or the console. Results are the',
  "API's JSON, also as structured content; times are ISO 8601 UTC, and each epoch-millisecond field (fromMs)",
  'has its ISO time beside it (from). An export with failing set needs the user to fix their bucket; status and',
  'lastError say why. Backfills export a past range again (at most 7 days, or from "earliest" for the whole',
  'history). Deleting an export keeps its files.',
].join(' ');

/** Epoch milliseconds from 2001 on: a time, not a duration. */
const EPOCH_MS_FROM = Date.parse('2001-01-01T00:00:00Z');

/**
 * The API's JSON with, beside each epoch-millisecond field (`fromMs`, `toMs` of a run's stats), its ISO 8601
 * time under the name without `Ms` (`from`), unless that name is taken. Durations (`durationMs`) stay as they are.
 */
export function withIsoTimes(json: unknown): unknown {
  if (Array.isArray(json)) return json.map(withIsoTimes);
  if (json === null || typeof json !== 'object') return json;
  const result: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(json)) {
    result[key] = withIsoTimes(value);
    const name = key.endsWith('Ms') ? key.slice(0, -2) : '';
    if (name && typeof value === 'number' && value >= EPOCH_MS_FROM && !(name in json))
      result[name] = new Date(value).toISOString();
  }
  return result;
}

/** What a tool returns for an API answer: the JSON as text, and as structured content. */
function apiResult(json: unknown): CallToolResult {
  const shown = withIsoTimes(json);
  return {
    content: [{ type: 'text', text: JSON.stringify(shown, null, 2) }],
    ...(shown !== null && typeof shown === 'object' && !Array.isArray(shown)
      ? { structuredContent: shown as Record<string, unknown> }
      : {}),
  };
}

/** The descriptions of the request body's fields of an operation, from the OpenAPI document. */
function requestFieldDescriptions(operationId: string): Record<string, string> {
  for (const pathItem of Object.values(openapiDocument.paths as Record<string, Record<string, unknown>>)) {
    for (const operation of Object.values(pathItem) as Record<string, unknown>[]) {
      if (operation.operationId !== operationId) continue;
      const body = operation.requestBody as
        | { content?: Record<string, { schema?: { properties?: Record<string, { description?: string }> } }> }
        | undefined;
      const properties = body?.content?.['application/json']?.schema?.properties ?? {};
      return Object.fromEntries(
        Object.entries(properties).flatMap(([name, property]) =>
          property.description ? [[name, property.description]] : [],
        ),
      );
    }
  }
  throw new Error(`No operation ${operationId} in the OpenAPI document`);
}

/** What the OpenAPI document leaves undescribed (its constraints say enough to a person reading it). */
const FIELD_DESCRIPTIONS: Record<string, string> = {
  name: 'A name for the export, shown in lists (at most 255 characters).',
  isEnabled: 'false pauses the export (no scheduled runs), true resumes it.',
  datasets:
    'What to export: email_events, sms_events, custom_events (events, in windows of the frequency) and ' +
    'subscribers (a snapshot per UTC day).',
  frequency:
    'How often it runs: every_5_minutes, every_15_minutes, hourly or daily; also the size of its event windows.',
};

/**
 * The zod shape of a request body with a description on each field: its own, else the OpenAPI document's for
 * the operations (the first that describes it), else {@link FIELD_DESCRIPTIONS}.
 */
export function describedShape<T extends z.ZodRawShape>(shape: T, ...operationIds: string[]): T {
  const documented = Object.assign(
    {},
    ...operationIds.toReversed().map((operationId) => requestFieldDescriptions(operationId)),
  ) as Record<string, string>;
  return Object.fromEntries(
    Object.entries(shape as unknown as Record<string, z.ZodType>).map(([name, field]) => {
      const description = documented[name] ?? FIELD_DESCRIPTIONS[name];
      return [name, field.description || !description ? field : field.describe(description)];
    }),
  ) as unknown as T;
}

/** A tool error: a line for the message, one per field issue, then the API's error JSON. */
function errorResult(error: unknown): CallToolResult {
  if (error instanceof ApiError) {
    const lines = [
      `${error.message} (HTTP ${error.status}${error.code ? `, ${error.code}` : ''})`,
      ...error.issues.map((issue) => `- ${issue.path || '(body)'}: ${issue.message}`),
    ];
    return {
      isError: true,
      content: [
        { type: 'text', text: lines.join('\n') },
        { type: 'text', text: JSON.stringify(error.body, null, 2) },
      ],
    };
  }
  if (error instanceof ApiUnreachableError || error instanceof UsageError)
    return { isError: true, content: [{ type: 'text', text: error.message }] };
  throw error;
}

async function call(act: () => Promise<unknown>): Promise<CallToolResult> {
  try {
    return apiResult(await act());
  } catch (error) {
    return errorResult(error);
  }
}

/**
 * The MCP server never asks for a secret: a tool's arguments pass through a model's context and its
 * transcripts. Its create and update tools take no access key; an export writes with an IAM role
 * (`roleArn`), or is given its key with the CLI, the secret on standard input (docs/cli.md).
 */
const KEY_FIELDS = ['accessKeyId', 'secretAccessKey'] as const;
const NO_KEY = { accessKeyId: true, secretAccessKey: true } as const;
const NO_SECRET_HERE =
  'This tool takes no access key or secret: a secret must not pass through a model. Give the export an IAM role (roleArn), or set its key with the CLI, the secret on standard input: sluice data-exports create|update … --access-key-id <id> --secret-access-key-stdin.';

/** A tool error for arguments carrying an access key, or undefined when there is none. */
function refuseKey(args: Record<string, unknown>): CallToolResult | undefined {
  if (!KEY_FIELDS.some((field) => field in args)) return undefined;
  return { isError: true, content: [{ type: 'text', text: NO_SECRET_HERE }] };
}

const READ_ONLY: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, openWorldHint: false };

/** The MCP server with the data export and backfill tools, each calling the API through `client`. */
export function createMcpServer(client: DataExportsClient): McpServer {
  const server = new McpServer({ name: 'sluice', version: VERSION }, { instructions: MCP_INSTRUCTIONS });

  server.registerTool(
    'list_data_exports',
    {
      title: 'List data exports',
      description: operationDescription('listDataExports'),
      annotations: READ_ONLY,
    },
    () => call(() => client.list()),
  );
  server.registerTool(
    'create_data_export',
    {
      title: 'Create data export',
      description: `${operationDescription('createDataExport')} Through this tool: with roleArn only (no access key or secret; set a key with the CLI).`,
      inputSchema: createRequestSchema
        .omit(NO_KEY)
        .extend(describedShape(createRequestSchema.omit(NO_KEY).shape, 'createDataExport')),
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: true,
      },
    },
    (body) => refuseKey(body) ?? call(() => client.create(body)),
  );
  server.registerTool(
    'get_data_export',
    {
      title: 'Get data export',
      description: operationDescription('getDataExport'),
      inputSchema: idShape,
      annotations: READ_ONLY,
    },
    ({ id }) => call(() => client.get(id)),
  );
  server.registerTool(
    'update_data_export',
    {
      title: 'Update data export',
      description: `${operationDescription('updateDataExport')} Replaces the fields sent; isEnabled false pauses. Takes no access key or secret (set a key with the CLI).`,
      inputSchema: z.looseObject({
        ...idShape,
        ...describedShape(updateRequestSchema.omit(NO_KEY).shape, 'updateDataExport', 'createDataExport'),
      }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
    },
    ({ id, ...body }) => refuseKey(body) ?? call(() => client.update(id, body)),
  );
  server.registerTool(
    'delete_data_export',
    {
      title: 'Delete data export',
      description: operationDescription('deleteDataExport'),
      inputSchema: idShape,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    ({ id }) => call(() => client.delete(id)),
  );
  server.registerTool(
    'test_data_export',
    {
      title: 'Test data export connection',
      description: operationDescription('testDataExport'),
      inputSchema: idShape,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    },
    ({ id }) => call(() => client.test(id)),
  );
  server.registerTool(
    'run_data_export',
    {
      title: 'Run data export now',
      description: operationDescription('runDataExport'),
      inputSchema: idShape,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    },
    ({ id }) => call(() => client.run(id)),
  );
  server.registerTool(
    'list_data_export_runs',
    {
      title: 'List data export runs',
      description: operationDescription('listDataExportRuns'),
      inputSchema: {
        ...idShape,
        limit: z
          .number()
          .int()
          .min(RUNS_LIMIT.min)
          .max(RUNS_LIMIT.max)
          .optional()
          .describe(`At most this many runs (default ${RUNS_LIMIT.default})`),
        nextToken: z
          .string()
          .optional()
          .describe('The nextToken of the previous page, for the runs after it'),
      },
      annotations: READ_ONLY,
    },
    ({ id, limit, nextToken }) => call(() => client.runs(id, limit, nextToken)),
  );
  server.registerTool(
    'list_child_organizations',
    {
      title: 'List child organizations',
      description: operationDescription('listChildOrganizations'),
      annotations: READ_ONLY,
    },
    () => call(() => client.childOrganizations()),
  );
  registerBackfillTools(server, client);
  return server;
}

const backfillIdShape = {
  ...idShape,
  backfillId: z
    .string()
    .regex(BACKFILL_ID_RE, 'Not a backfill id: one looks like bf_0123456789abcdef01234567.')
    .describe('The backfill id, such as bf_0123456789abcdef01234567'),
};

/** The five backfill tools: create, list, get (with per-dataset progress), cancel, retry. */
function registerBackfillTools(server: McpServer, client: DataExportsClient): void {
  server.registerTool(
    'create_backfill',
    {
      title: 'Create backfill',
      description: operationDescription('createBackfill'),
      inputSchema: z.looseObject({
        ...idShape,
        ...describedShape(createBackfillRequestSchema.shape, 'createBackfill'),
      }),
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: true,
      },
    },
    ({ id, ...body }) => call(() => client.createBackfill(id, body)),
  );
  server.registerTool(
    'list_backfills',
    {
      title: 'List backfills',
      description: operationDescription('listBackfills'),
      inputSchema: {
        ...idShape,
        limit: z
          .number()
          .int()
          .min(RUNS_LIMIT.min)
          .max(RUNS_LIMIT.max)
          .optional()
          .describe(`At most this many backfills (default ${RUNS_LIMIT.default})`),
        nextToken: z.string().optional().describe('The nextToken of the previous page'),
      },
      annotations: READ_ONLY,
    },
    ({ id, limit, nextToken }) => call(() => client.backfills(id, limit, nextToken)),
  );
  server.registerTool(
    'get_backfill',
    {
      title: 'Get backfill',
      description: operationDescription('getBackfill'),
      inputSchema: backfillIdShape,
      annotations: READ_ONLY,
    },
    ({ id, backfillId }) => call(() => client.backfill(id, backfillId)),
  );
  server.registerTool(
    'cancel_backfill',
    {
      title: 'Cancel backfill',
      description: operationDescription('cancelBackfill'),
      inputSchema: backfillIdShape,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    ({ id, backfillId }) => call(() => client.cancelBackfill(id, backfillId)),
  );
  server.registerTool(
    'retry_backfill',
    {
      title: 'Retry backfill',
      description: operationDescription('retryBackfill'),
      inputSchema: backfillIdShape,
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: false,
      },
    },
    ({ id, backfillId }) => call(() => client.retryBackfill(id, backfillId)),
  );
}

/** Serves the tools on stdin/stdout until the client closes the stream. */
export async function serveMcp(connection: Connection, fetchImpl?: typeof fetch): Promise<void> {
  const server = createMcpServer(new DataExportsClient(connection, fetchImpl));
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = resolve;
    process.stdin.once('end', resolve);
  });
  await server.connect(transport);
  await closed;
  await server.close();
}
