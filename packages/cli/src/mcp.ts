/**
 * `sluice mcp`: an MCP server on stdio, one tool per operation of the Data Exports API. Tool input schemas are
 * the zod schemas the API validates request bodies with (stage 1 of `@sluice/api` validation), plus `id`;
 * descriptions are the operations' own in the OpenAPI document. Every tool calls the HTTP API: results are
 * the API's JSON, API errors come back as tool errors (`isError`) with the message and each field issue.
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

/** What a tool returns for an API answer. */
function apiResult(json: unknown): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(json, null, 2) }] };
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
  const server = new McpServer({ name: 'sluice', version: VERSION });

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
      inputSchema: createRequestSchema.omit(NO_KEY),
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
      inputSchema: z.looseObject({ ...idShape, ...updateRequestSchema.omit(NO_KEY).shape }),
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

/** The four backfill tools: create, list, get (with per-dataset progress), cancel. */
function registerBackfillTools(server: McpServer, client: DataExportsClient): void {
  server.registerTool(
    'create_backfill',
    {
      title: 'Create backfill',
      description: operationDescription('createBackfill'),
      inputSchema: z.looseObject({ ...idShape, ...createBackfillRequestSchema.shape }),
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
        limit: z.number().int().min(RUNS_LIMIT.min).max(RUNS_LIMIT.max).optional(),
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
