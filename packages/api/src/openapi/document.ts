/**
 * Sluice's OpenAPI 3.1 document for the Data Exports API: the one source of truth. The API serves it at
 * `GET /v1/openapi.json` and `GET /api/v1/openapi.json` (no API key), the contract suites check every
 * response against it, and `scripts/openapi-diff.ts` compares it with the product contract it was written
 * from (the reference `data-exports.openapi.yaml`).
 *
 * It matches the reference in paths, operations, schemas and status codes, and adds only what Sluice really
 * does: the status codes every operation can answer (403, 413, 415, 422, 429, 500, 503), the per-dataset shape of
 * a run's `stats`, the error codes, the runs list's `nextToken` pages, and this document's own path.
 *
 * To change it:
 * - add freely: a path, an operation, an optional property, a status code, an enum value. These pass the
 *   diff against the reference as they are;
 * - anything else (removing or renaming, a new required field, a changed type or constraint) is a deviation
 *   from the reference: list it with its reason in `deviations.yaml` beside this file, or the diff fails;
 * - an enum that mirrors a constant of the code (datasets, frequencies, statuses) is checked against that
 *   constant by `document.test.ts`, and every operation against the router.
 */

/** A JSON value: what the document is made of, so that it serializes as written. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/** The first product's datasets, then (a Sluice addition) the second product's (reference 004). */
const SECOND_PRODUCT_DATASET_ENUM = ['message_events', 'project_summary', 'opt_out_events', 'click_events'];
const DATASET_ENUM = [
  'email_events',
  'sms_events',
  'custom_events',
  'subscribers',
  ...SECOND_PRODUCT_DATASET_ENUM,
];
const FREQUENCY_ENUM = ['every_5_minutes', 'every_15_minutes', 'hourly', 'daily'];
/** `format` and `compression` (a Sluice addition), as create and update take them. */
const FILE_FORMAT_PROPERTIES = {
  format: {
    type: 'string',
    enum: ['jsonl', 'parquet'],
    description:
      'jsonl: gzipped JSON lines (.jsonl.gz). parquet: Parquet files (.parquet) with typed columns: timestamps as TIMESTAMP(MILLIS, UTC), integers and numbers as such, tags as a list, properties and custom_attributes as JSON strings, schema_version as INT32. Same layout, windows, names and 50,000-row limit. A change applies from the next window: windows already planned keep their format.',
  },
  compression: {
    type: 'string',
    enum: ['gzip', 'snappy', 'zstd'],
    description: 'gzip for jsonl (its only compression); snappy (the default) or zstd for parquet.',
  },
};
const PROVIDER_ENUM = ['s3', 'gcs'];
/** `layout` and `schedule` (Sluice additions), as create and update take them and `DataExport` shows them. */
const LAYOUT_PROPERTIES = {
  layout: {
    type: 'string',
    enum: ['date', 'run_hour'],
    description:
      "date: <prefix>/<dataset>/date=YYYY-MM-DD/<dataset>-<fromMs>-<toMs>-NNNN files on the UTC midnight grid, 50,000 rows a file. run_hour: <prefix>/v1/schema_type=<dataset>/year=YYYY/month=MM/day=DD/hour=HH/<organization_id>_<dataset>_<YYYYMMDDTHHMMSSZ>_<job>.part-NNN files named by the window's scheduled run (UTC), 100,000 rows a file; every window ends five minutes before its run. run_hour takes hourly and daily and event datasets only (400 invalid_input otherwise). A change applies from the next planned window.",
  },
  schedule: {
    type: ['object', 'null'],
    properties: {
      minute: { type: 'integer', description: 'Minute of the run, 0 to 59 (400 invalid_input otherwise).' },
      hour: {
        type: 'integer',
        description: 'Hour of the run, UTC, 0 to 23: daily exports only (400 invalid_input otherwise).',
      },
    },
    required: ['minute'],
    additionalProperties: false,
    description:
      'When runs happen, hourly and daily exports only: {"minute": 5} runs at five past every hour, {"hour": 8, "minute": 0} at 08:00 UTC. Absent or null: a slot Sluice picks from the export id. In the date layout windows stay on the UTC grid; in run_hour they end five minutes before each run.',
  },
};
/** `childOrganizations` (a Sluice addition), as create and update take it and `DataExport` shows it. */
const CHILD_ORGANIZATIONS_PROPERTY: JsonObject = {
  type: 'array',
  items: { type: 'string' },
  description:
    'Child organizations (workspaces linked under yours, GET /organizations/children) whose data the export includes besides your own: their workspace ids, or exactly ["*"] for every current and future child. [] or absent: none. Only current children may be named (400 invalid_input at childOrganizations[i] otherwise, also for a duplicate, a malformed id or "*" beside ids). A child added later starts at the time it is added, like a dataset added later; a child removed or unlinked stops before the next window. In a DataExport: [] when none.',
};
const EVENT_DATASET_ENUM = ['email_events', 'sms_events', 'custom_events', ...SECOND_PRODUCT_DATASET_ENUM];

/** A response whose body is the `Error` schema. */
function errorResponse(description: string): JsonObject {
  return { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
}

/** An error response with a `Retry-After` header, and its example body. */
function retryAfterResponse(description: string, example: JsonObject): JsonObject {
  return {
    description,
    headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } },
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' }, example } },
  };
}

/** A required JSON request body. */
function requestBody(schema: JsonObject): JsonObject {
  return { required: true, content: { 'application/json': { schema } } };
}

/** A `200`/`201` response: `{success: true, ...properties}`. */
function successResponse(description: string, properties: JsonObject): JsonObject {
  return {
    description,
    content: {
      'application/json': {
        schema: {
          type: 'object',
          properties: { success: { type: 'boolean', example: true }, ...properties },
        },
      },
    },
  };
}

const ID_PARAMETER: JsonObject = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };
const DATA_EXPORT_REF: JsonObject = { $ref: '#/components/schemas/DataExport' };
/** Sluice's addition to the create and update requests: server-side encryption of every object. */
function encryptionProperties(more: string): JsonObject {
  return {
    serverSideEncryption: {
      type: ['string', 'null'],
      enum: ['AES256', 'aws:kms', null],
      description: `Server-side encryption requested on every object Sluice writes (files, manifests, _SUCCESS, the connection test): AES256 (S3-managed keys) or aws:kms (your KMS key, kmsKeyId). Not offered for gcs (400 invalid_input). A key the credentials cannot use fails the connection test (400 connection_failed).${more}`,
    },
    kmsKeyId: {
      type: ['string', 'null'],
      description:
        'KMS key id, ARN or alias, with serverSideEncryption aws:kms. Without it, the bucket default KMS key.',
    },
  };
}

/** Sluice's addition to the create request: an IAM role to assume instead of an access key. */
const ROLE_ARN_PROPERTY: JsonObject = {
  type: 'string',
  description:
    "Amazon S3 only (provider s3 without an endpoint): an IAM role in your account that Sluice assumes through STS, instead of accessKeyId and secretAccessKey. Sluice sends an external ID (externalId in the response) that the role's trust policy must require; it is the same for every role export of your workspace, so a create whose test cannot assume the role yet fails with 400 connection_failed naming it: add it to the trust policy and send the same request again. A role in Sluice's own AWS account is refused with 400 invalid_input, and a role whose trust policy admits Sluice without the external ID condition with 400 connection_failed. See docs/deploy.md for the policies.",
};

/** Sluice's addition to the responses of create, update and test: what the connection test warns about. */
const WARNINGS: JsonObject = {
  type: 'array',
  description:
    'Present when the connection test found something that works but deserves a look; the request still succeeded. no_abort_incomplete_multipart_rule: no lifecycle rule of the bucket aborts incomplete multipart uploads (or Sluice could not read the lifecycle configuration: grant s3:GetLifecycleConfiguration); the message gives the rule to add.',
  items: { $ref: '#/components/schemas/ConnectionWarning' },
};

const BACKFILL_REF: JsonObject = { $ref: '#/components/schemas/Backfill' };
const BACKFILL_ID_PARAMETER: JsonObject = {
  name: 'backfillId',
  in: 'path',
  required: true,
  schema: { type: 'string' },
};
const TRANSIENT_DATABASE_UNAVAILABLE: JsonObject = {
  $ref: '#/components/responses/TransientDatabaseUnavailable',
};
const INTERNAL_ERROR: JsonObject = { $ref: '#/components/responses/InternalError' };
const RATE_LIMITED: JsonObject = { $ref: '#/components/responses/RateLimited' };

const UNAUTHORIZED = 'Unauthorized';
const FORBIDDEN = 'Missing scope, or the member role cannot manage workspace settings';
const NOT_FOUND = 'Data export not found';
const PAYLOAD_TOO_LARGE = 'The request body is over 64 KB (code payload_too_large)';
const UNSUPPORTED_MEDIA_TYPE = 'The request body is not sent as JSON (code unsupported_media_type)';
const MOVE_NEEDS_CREDENTIALS =
  'A change of this field needs accessKeyId and secretAccessKey in the same request.';

/** The `limit` and `nextToken` query parameters of a paged list of `what`. */
function pageParameters(what: string): JsonObject[] {
  return [
    {
      name: 'limit',
      in: 'query',
      required: false,
      schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
    },
    {
      name: 'nextToken',
      in: 'query',
      required: false,
      description: `The nextToken of the previous page, to read the ${what} after it.`,
      schema: { type: 'string' },
    },
  ];
}

const NEXT_TOKEN_PROPERTY: JsonObject = {
  type: 'string',
  description:
    'Present when the page is full: send it as nextToken for the next page (which may be empty). Absent on the last page.',
};
const BAD_PAGE =
  'limit is not an integer from 1 to 100, or nextToken is not one this API returned (code invalid_input)';

/** The responses every operation on one data export can give besides its own: 401, 403, 404, 429, 500, 503. */
function itemErrorResponses(): JsonObject {
  return {
    '401': errorResponse(UNAUTHORIZED),
    '403': errorResponse(FORBIDDEN),
    '404': errorResponse(NOT_FOUND),
    '429': RATE_LIMITED,
    '500': INTERNAL_ERROR,
    '503': TRANSIENT_DATABASE_UNAVAILABLE,
  };
}

export const openapiDocument: JsonObject = {
  openapi: '3.1.0',
  info: {
    title: 'Data Exports API',
    description: 'Stream events and subscriber snapshots to your S3 or GCS bucket',
    version: '1.0.0',
  },
  servers: [
    { url: '/api/v1', description: 'This deployment' },
    { url: '/v1', description: 'This deployment, legacy alias' },
  ],
  security: [{ bearerAuth: [] }],
  tags: [
    { name: 'Data Exports', description: 'Stream events and subscriber snapshots to your S3 or GCS bucket' },
    { name: 'Organizations', description: 'The child organizations of your workspace' },
    { name: 'Meta', description: 'This document' },
  ],
  paths: {
    '/data-exports': {
      get: {
        summary: 'List data exports',
        description:
          'Lists data export destinations with status, per-dataset progress and the last error. Credentials are never returned. Requires the data_exports:read scope.',
        operationId: 'listDataExports',
        tags: ['Data Exports'],
        responses: {
          '200': successResponse('Data exports returned', {
            dataExports: { type: 'array', items: DATA_EXPORT_REF },
          }),
          '401': errorResponse(UNAUTHORIZED),
          '403': errorResponse(FORBIDDEN),
          '429': RATE_LIMITED,
          '500': INTERNAL_ERROR,
          '503': TRANSIENT_DATABASE_UNAVAILABLE,
        },
      },
      post: {
        summary: 'Create data export',
        description:
          'Adds an S3, Google Cloud Storage or S3-compatible bucket as a data export destination. A small test file is first written under the path prefix; the request fails with 400 when that write fails. The first export starts immediately and later exports follow the frequency. Requires data_exports:write, subscribers:read and analytics:read.',
        operationId: 'createDataExport',
        tags: ['Data Exports'],
        requestBody: requestBody({
          type: 'object',
          properties: {
            name: { type: 'string', maxLength: 255 },
            provider: {
              type: 'string',
              enum: PROVIDER_ENUM,
              description:
                's3 for Amazon S3 or any S3-compatible service; gcs for Google Cloud Storage (HMAC keys).',
            },
            bucket: { type: 'string', description: 'Bucket name, not a URL.' },
            region: {
              type: ['string', 'null'],
              description:
                'Bucket region. Required for Amazon S3 without a custom endpoint; defaults to auto otherwise.',
            },
            endpoint: {
              type: ['string', 'null'],
              description:
                'HTTPS origin of an S3-compatible service (R2, MinIO, Backblaze). Must resolve to a public address. Not allowed for gcs.',
            },
            pathPrefix: {
              type: ['string', 'null'],
              description:
                "Folder inside the bucket. Leading and trailing slashes are removed. Letters, digits, / and ! _ . * ' ( ) = - only, no empty, . or .. segment, at most 512 characters.",
            },
            accessKeyId: {
              type: 'string',
              description:
                'Access key ID (GCS HMAC access ID). Send it with secretAccessKey, or send roleArn instead (422 for neither, 400 invalid_input for both).',
            },
            secretAccessKey: {
              type: 'string',
              description: 'Secret access key. Stored encrypted and never returned.',
            },
            roleArn: ROLE_ARN_PROPERTY,
            datasets: {
              type: 'array',
              minItems: 1,
              items: { type: 'string', enum: DATASET_ENUM },
              default: ['email_events', 'custom_events', 'subscribers'],
            },
            frequency: { type: 'string', enum: FREQUENCY_ENUM, default: 'every_15_minutes' },
            startFrom: {
              type: ['string', 'null'],
              format: 'date-time',
              description: 'Include events recorded since this time, at most 30 days ago. Defaults to now.',
            },
            format: { ...FILE_FORMAT_PROPERTIES.format, default: 'jsonl' },
            compression: FILE_FORMAT_PROPERTIES.compression,
            ...encryptionProperties(''),
            layout: { ...LAYOUT_PROPERTIES.layout, default: 'date' },
            schedule: LAYOUT_PROPERTIES.schedule,
            childOrganizations: CHILD_ORGANIZATIONS_PROPERTY,
          },
          required: ['name', 'provider', 'bucket'],
          anyOf: [{ required: ['accessKeyId', 'secretAccessKey'] }, { required: ['roleArn'] }],
        }),
        responses: {
          '201': successResponse('Data export created and first run queued', {
            dataExport: DATA_EXPORT_REF,
            warnings: WARNINGS,
          }),
          '400': errorResponse(
            'Validation error (code invalid_input), a body that is empty or not JSON (code invalid_json), or the test write failed (code connection_failed, with the reason: missing bucket, access denied, wrong region, unknown key or unsafe endpoint)',
          ),
          '401': errorResponse(UNAUTHORIZED),
          '403': errorResponse(FORBIDDEN),
          '409': errorResponse(
            'The workspace already has the most data exports this deployment allows (code limit_exceeded; the deployment setting maxExportsPerWorkspace, 100 by default). Delete one first.',
          ),
          '413': errorResponse(PAYLOAD_TOO_LARGE),
          '415': errorResponse(UNSUPPORTED_MEDIA_TYPE),
          '422': errorResponse(
            'Request body does not match the schema (for example an unknown dataset), code unprocessable_entity',
          ),
          '429': RATE_LIMITED,
          '500': INTERNAL_ERROR,
          '503': TRANSIENT_DATABASE_UNAVAILABLE,
        },
      },
    },
    '/data-exports/{id}': {
      get: {
        summary: 'Get data export',
        description: 'Returns one data export with status and per-dataset progress.',
        operationId: 'getDataExport',
        tags: ['Data Exports'],
        parameters: [ID_PARAMETER],
        responses: {
          '200': successResponse('Data export returned', { dataExport: DATA_EXPORT_REF }),
          ...itemErrorResponses(),
        },
      },
      patch: {
        summary: 'Update data export',
        description:
          'Renames, changes datasets or frequency, pauses or resumes, moves the destination, or rotates credentials. Location and credential changes are verified with a test write first. A new bucket, endpoint or region must come with accessKeyId and secretAccessKey (400 invalid_input naming the fields otherwise): the stored secret is only sent to the location it was given for. Newly added event datasets start from the time of the change. Changing the bucket or prefix continues from the current progress in the new location.',
        operationId: 'updateDataExport',
        tags: ['Data Exports'],
        parameters: [ID_PARAMETER],
        requestBody: requestBody({
          type: 'object',
          properties: {
            name: { type: 'string', maxLength: 255 },
            bucket: { type: 'string', description: MOVE_NEEDS_CREDENTIALS },
            region: { type: ['string', 'null'], description: MOVE_NEEDS_CREDENTIALS },
            endpoint: {
              type: ['string', 'null'],
              description: `Send null or an empty string to clear a custom endpoint. ${MOVE_NEEDS_CREDENTIALS}`,
            },
            pathPrefix: { type: ['string', 'null'] },
            accessKeyId: { type: 'string', description: 'Must be sent together with secretAccessKey.' },
            secretAccessKey: { type: 'string', description: 'Must be sent together with accessKeyId.' },
            roleArn: {
              type: 'string',
              description:
                'A new role for an export that assumes one (tested first; the externalId stays the same). An export with an access key cannot switch to a role, nor the reverse: create a new export.',
            },
            datasets: {
              type: 'array',
              minItems: 1,
              items: { type: 'string', enum: DATASET_ENUM },
            },
            frequency: { type: 'string', enum: FREQUENCY_ENUM },
            isEnabled: { type: 'boolean', description: 'false pauses the export, true resumes it.' },
            ...FILE_FORMAT_PROPERTIES,
            ...encryptionProperties(' Send null to stop requesting it.'),
            ...LAYOUT_PROPERTIES,
            childOrganizations: CHILD_ORGANIZATIONS_PROPERTY,
          },
        }),
        responses: {
          '200': successResponse('Data export updated', { dataExport: DATA_EXPORT_REF, warnings: WARNINGS }),
          '400': errorResponse(
            'Validation error (code invalid_input; an empty body or an unknown field included), a body that is not JSON (code invalid_json), or the test write failed (code connection_failed)',
          ),
          ...itemErrorResponses(),
          '413': errorResponse(PAYLOAD_TOO_LARGE),
          '415': errorResponse(UNSUPPORTED_MEDIA_TYPE),
          '422': errorResponse(
            'Request body does not match the schema (for example an unknown dataset), code unprocessable_entity',
          ),
        },
      },
      delete: {
        summary: 'Delete data export',
        description:
          'Stops exporting to the destination and deletes its run history. Files already written stay in the bucket.',
        operationId: 'deleteDataExport',
        tags: ['Data Exports'],
        parameters: [ID_PARAMETER],
        responses: {
          '200': successResponse('Data export deleted', { dataExportId: { type: 'string' } }),
          ...itemErrorResponses(),
        },
      },
    },
    '/data-exports/{id}/test': {
      post: {
        summary: 'Test data export connection',
        description:
          "Writes a small test file with the stored credentials and the export's server-side encryption settings.",
        operationId: 'testDataExport',
        tags: ['Data Exports'],
        parameters: [ID_PARAMETER],
        responses: {
          '200': successResponse('Test file written', {
            testedAt: { type: 'string', format: 'date-time' },
            warnings: WARNINGS,
          }),
          '400': errorResponse('The test write failed (code connection_failed)'),
          '409': errorResponse(
            'The stored secret no longer opens (code secret_rejected): update the export with its credentials again',
          ),
          ...itemErrorResponses(),
        },
      },
    },
    '/data-exports/{id}/run': {
      post: {
        summary: 'Run data export now',
        description:
          'Queues an export immediately instead of waiting for the schedule. If a run is already queued or running, no second run starts.',
        operationId: 'runDataExport',
        tags: ['Data Exports'],
        parameters: [ID_PARAMETER],
        responses: {
          '200': successResponse('Export queued', {
            queued: { type: 'boolean', example: true },
            dataExport: DATA_EXPORT_REF,
          }),
          ...itemErrorResponses(),
          '409': errorResponse('The data export is paused (code destination_disabled)'),
        },
      },
    },
    '/data-exports/{id}/runs': {
      get: {
        summary: 'List data export runs',
        description: 'Lists recent runs from the last 14 days, newest first.',
        operationId: 'listDataExportRuns',
        tags: ['Data Exports'],
        parameters: [ID_PARAMETER, ...pageParameters('runs')],
        responses: {
          '200': successResponse('Runs returned', {
            runs: { type: 'array', items: { $ref: '#/components/schemas/DataExportRun' } },
            nextToken: NEXT_TOKEN_PROPERTY,
          }),
          '400': errorResponse(BAD_PAGE),
          ...itemErrorResponses(),
        },
      },
    },
    '/data-exports/{id}/backfills': {
      get: {
        summary: 'List backfills',
        description:
          'Lists the backfills of a data export, newest first, with their progress. Requires data_exports:read.',
        operationId: 'listBackfills',
        tags: ['Data Exports'],
        parameters: [ID_PARAMETER, ...pageParameters('backfills')],
        responses: {
          '200': successResponse('Backfills returned', {
            backfills: { type: 'array', items: BACKFILL_REF },
            nextToken: NEXT_TOKEN_PROPERTY,
          }),
          '400': errorResponse(BAD_PAGE),
          ...itemErrorResponses(),
        },
      },
      post: {
        summary: 'Create backfill',
        description:
          'Exports a chosen range of recorded time again, on demand: at most 7 days, not in the future, not before the earliest available data. With "from": "earliest" it exports the whole history in chunks of at most 7 days (at most once per 30 days; one that failed or was cancelled does not count). Files have the same layout and names as the regular export, so a row exported by both lands in a file of the same name with the same content. Runs beside the regular export without moving its position; one backfill runs per data export at a time, others wait queued. Requires data_exports:write.',
        operationId: 'createBackfill',
        tags: ['Data Exports'],
        parameters: [ID_PARAMETER],
        requestBody: requestBody({
          type: 'object',
          properties: {
            datasets: {
              type: 'array',
              minItems: 1,
              description: "Event datasets to backfill. Default: the data export's event datasets.",
              items: { type: 'string', enum: EVENT_DATASET_ENUM },
            },
            from: {
              description: 'Start of the range (inclusive), or "earliest" for the whole history.',
              oneOf: [
                { type: 'string', format: 'date-time' },
                { type: 'string', enum: ['earliest'] },
              ],
            },
            to: {
              type: 'string',
              format: 'date-time',
              description: 'End of the range (exclusive). Required unless from is "earliest" (default: now).',
            },
          },
          required: ['from'],
        }),
        responses: {
          '202': successResponse('Backfill queued', { backfill: BACKFILL_REF }),
          '400': errorResponse(
            'The range is longer than 7 days, in the future, before the earliest available data, or names a dataset the export does not export (code invalid_input)',
          ),
          ...itemErrorResponses(),
          '409': errorResponse(
            'The data export is paused (code destination_disabled), or a full-history backfill was started in the last 30 days (code full_history_recent)',
          ),
          '413': errorResponse(PAYLOAD_TOO_LARGE),
          '415': errorResponse(UNSUPPORTED_MEDIA_TYPE),
          '422': errorResponse(
            'The body does not match the schema: an unknown dataset, a malformed from or to (code unprocessable_entity)',
          ),
        },
      },
    },
    '/data-exports/{id}/backfills/{backfillId}': {
      get: {
        summary: 'Get backfill',
        description: 'Returns one backfill with its per-dataset progress. Requires data_exports:read.',
        operationId: 'getBackfill',
        tags: ['Data Exports'],
        parameters: [ID_PARAMETER, BACKFILL_ID_PARAMETER],
        responses: {
          '200': successResponse('Backfill returned', { backfill: BACKFILL_REF }),
          ...itemErrorResponses(),
        },
      },
      delete: {
        summary: 'Cancel backfill',
        description:
          'Cancels a queued or running backfill; a running one stops before its next file. Files already written stay. Requires data_exports:write.',
        operationId: 'cancelBackfill',
        tags: ['Data Exports'],
        parameters: [ID_PARAMETER, BACKFILL_ID_PARAMETER],
        responses: {
          '200': successResponse('Backfill cancelled', { backfill: BACKFILL_REF }),
          ...itemErrorResponses(),
          '409': errorResponse(
            'The backfill has already finished or been cancelled (code backfill_finished)',
          ),
        },
      },
    },
    '/data-exports/{id}/backfills/{backfillId}/retry': {
      post: {
        summary: 'Retry backfill',
        description:
          'Retries a failed backfill without restarting it: it is queued again and its runs write only the windows not yet done (a window begun continues from its next file); what it wrote stays, and its progress keeps counting from there. A full history retried takes the 30-day allowance again. Requires data_exports:write.',
        operationId: 'retryBackfill',
        tags: ['Data Exports'],
        parameters: [ID_PARAMETER, BACKFILL_ID_PARAMETER],
        responses: {
          '202': successResponse('Backfill queued again', { backfill: BACKFILL_REF }),
          ...itemErrorResponses(),
          '409': errorResponse(
            'The backfill has not failed (code backfill_not_failed), the data export is paused (code destination_disabled), or another full-history backfill was started in the last 30 days (code full_history_recent)',
          ),
        },
      },
    },
    '/organizations/children': {
      get: {
        summary: 'List child organizations',
        description:
          "Lists the workspaces currently linked as children of yours (an operator links them), oldest link first: what a data export's childOrganizations may name. A child never sees its parent's exports, keys or data. Owners and admins only; requires data_exports:read.",
        operationId: 'listChildOrganizations',
        tags: ['Organizations'],
        responses: {
          '200': successResponse('Child organizations returned', {
            children: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  workspaceId: { type: 'string' },
                  linkedAt: {
                    type: 'string',
                    format: 'date-time',
                    description: 'When the current link was made.',
                  },
                },
                required: ['workspaceId', 'linkedAt'],
              },
            },
          }),
          '401': errorResponse(UNAUTHORIZED),
          '403': errorResponse(FORBIDDEN),
          '429': RATE_LIMITED,
          '500': INTERNAL_ERROR,
          '503': TRANSIENT_DATABASE_UNAVAILABLE,
        },
      },
    },
    '/openapi.json': {
      get: {
        summary: 'Get this OpenAPI document',
        description:
          'Returns this document as JSON. Needs no API key. Cacheable: send If-None-Match with the ETag to get 304 when it has not changed.',
        operationId: 'getOpenApiDocument',
        tags: ['Meta'],
        security: [],
        responses: {
          '200': {
            description: 'The OpenAPI document',
            headers: { ETag: { schema: { type: 'string' } } },
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  properties: {
                    openapi: { type: 'string' },
                    info: { type: 'object' },
                    paths: { type: 'object' },
                  },
                  required: ['openapi', 'info', 'paths'],
                },
              },
            },
          },
          '304': { description: 'The document has not changed since the ETag sent in If-None-Match' },
        },
      },
    },
  },
  components: {
    headers: {
      RetryAfter: {
        description: 'Number of seconds to wait before retrying the request.',
        schema: { type: 'integer', minimum: 1, example: 1 },
      },
    },
    responses: {
      TransientDatabaseUnavailable: retryAfterResponse(
        'The database was temporarily unavailable. The request may be retried after the delay in Retry-After.',
        {
          success: false,
          error: 'The service could not reach its database for a moment. Retry the request.',
          code: 'SERVICE_UNAVAILABLE',
        },
      ),
      RateLimited: retryAfterResponse(
        'Too many requests with this API key (code rate_limited): each key may send a steady number of requests a second with a burst, set by the deployment. Retry after the delay in Retry-After.',
        {
          success: false,
          error: 'Too many requests with this API key. Retry after 1 s.',
          code: 'rate_limited',
          retryable: true,
        },
      ),
      InternalError: {
        description:
          'An unexpected error. The message is always generic; the details are in the service logs, never in the response.',
        content: {
          'application/json': {
            schema: { $ref: '#/components/schemas/Error' },
            example: { success: false, error: 'Internal error', code: 'internal_error', retryable: true },
          },
        },
      },
    },
    schemas: {
      DataExport: {
        type: 'object',
        description:
          'A bucket that workspace data is streamed to as gzipped JSON lines. It carries accessKeyId (an access key) or roleArn and externalId (an IAM role Sluice assumes), never both.',
        oneOf: [{ required: ['accessKeyId'] }, { required: ['roleArn', 'externalId'] }],
        properties: {
          id: { type: 'string' },
          name: { type: 'string' },
          provider: { type: 'string', enum: PROVIDER_ENUM },
          bucket: { type: 'string' },
          region: { type: 'string' },
          endpoint: { type: ['string', 'null'] },
          pathPrefix: { type: 'string' },
          accessKeyId: {
            type: 'string',
            description:
              'Masked access key ID, for example AKIA…WXYZ. The secret is never returned. Absent when the export assumes an IAM role (roleArn).',
          },
          roleArn: {
            type: 'string',
            description: 'The IAM role Sluice assumes to write (Amazon S3); absent with an access key.',
          },
          externalId: {
            type: 'string',
            description:
              "The external ID Sluice sends when it assumes roleArn: the role's trust policy must require it (StringEquals sts:ExternalId). Chosen by Sluice, the same for the life of the export; not a secret. Absent with an access key.",
          },
          serverSideEncryption: {
            type: ['string', 'null'],
            enum: ['AES256', 'aws:kms', null],
            description: 'Server-side encryption requested on every object; null when none.',
          },
          kmsKeyId: { type: ['string', 'null'], description: 'The KMS key of aws:kms; null otherwise.' },
          datasets: { type: 'array', items: { type: 'string', enum: DATASET_ENUM } },
          childOrganizations: CHILD_ORGANIZATIONS_PROPERTY,
          frequency: { type: 'string', enum: FREQUENCY_ENUM },
          ...FILE_FORMAT_PROPERTIES,
          ...LAYOUT_PROPERTIES,
          isEnabled: { type: 'boolean' },
          status: {
            type: 'string',
            enum: ['idle', 'queued', 'running', 'failed'],
            description: 'failed means the last run failed; it retries automatically with backoff.',
          },
          startFrom: { type: 'string', format: 'date-time' },
          exportedThrough: {
            type: 'object',
            description:
              'Per dataset. Event datasets: everything recorded up to this timestamp has been written. subscribers: date of the last complete snapshot. null until the first export of that dataset.',
            additionalProperties: { type: ['string', 'null'] },
          },
          nextRunAt: { type: ['string', 'null'], format: 'date-time' },
          lastRunAt: { type: ['string', 'null'], format: 'date-time' },
          lastSuccessAt: { type: ['string', 'null'], format: 'date-time' },
          lastError: { type: ['string', 'null'] },
          lastErrorAt: { type: ['string', 'null'], format: 'date-time' },
          consecutiveFailures: { type: 'integer' },
          failing: {
            type: ['object', 'null'],
            description:
              "Set while the export fails for a reason only you can fix on your side: reason is access_denied, role_not_assumable, no_such_bucket, invalid_bucket_name, wrong_region, invalid_access_key, signature_mismatch, unsafe_endpoint, redirected, tls_error, not_supported, endpoint_unreachable, throttled, server_error, secret_rejected or invalid_location (lastError has the message). since is when the first of these failures happened. null while the export is healthy, and again once a run succeeds. Failures on Sluice's side never set it. Sluice also announces both changes as events to the platform that runs it.",
            properties: {
              since: { type: 'string', format: 'date-time' },
              reason: { type: 'string' },
            },
            required: ['since', 'reason'],
          },
          totalRowsExported: { type: 'integer' },
          createdAt: { type: 'string', format: 'date-time' },
          updatedAt: { type: 'string', format: 'date-time' },
        },
      },
      ConnectionWarning: {
        type: 'object',
        properties: {
          code: { type: 'string', enum: ['no_abort_incomplete_multipart_rule'] },
          message: { type: 'string', description: 'What to do, with the lifecycle rule to add.' },
        },
        required: ['code', 'message'],
      },
      Error: {
        type: 'object',
        properties: {
          success: { type: 'boolean', example: false },
          error: { type: 'string', example: 'Error message' },
          code: {
            type: 'string',
            description:
              'Optional stable machine-readable error discriminator when available. Sluice sends one on every error: invalid_input, invalid_json, connection_failed (400); unauthorized (401); forbidden (403); not_found, route_not_found (404); method_not_allowed (405, with an Allow header); destination_disabled, secret_rejected (the stored secret no longer opens: send the credentials again), limit_exceeded (409); payload_too_large (413); unsupported_media_type (415); unprocessable_entity (422); rate_limited (429, with a Retry-After header); internal_error (500); SERVICE_UNAVAILABLE (503).',
          },
          retryable: {
            type: 'boolean',
            description: 'Whether retrying the request can recover from the error.',
          },
          issues: {
            type: 'array',
            description:
              'Field-level problems with the request, when the endpoint reports them. Up to ten entries; `error` summarizes the first three.',
            items: { $ref: '#/components/schemas/InputIssue' },
          },
        },
        required: ['error'],
      },
      InputIssue: {
        type: 'object',
        properties: {
          path: {
            type: 'string',
            description:
              'Dotted field path, such as `audience.subscriberIds[0]`. Empty when the problem is with the request body itself.',
          },
          message: { type: 'string', description: 'What is wrong with the field.' },
          allowedValues: {
            type: 'array',
            description: 'Accepted values when the field only takes a fixed set of values.',
            items: {},
          },
        },
        required: ['path', 'message'],
      },
      DataExportRun: {
        type: 'object',
        properties: {
          id: { type: 'string' },
          destinationId: { type: 'string' },
          status: { type: 'string', enum: ['running', 'succeeded', 'failed'] },
          isManual: { type: 'boolean' },
          rowCount: { type: 'integer' },
          fileCount: { type: 'integer' },
          byteCount: { type: 'integer' },
          stats: {
            type: 'object',
            description:
              'Per-dataset rows, files, bytes and the window exported: each dataset\'s job in the history, with its status and duration. While the run is `running`, rows, files and bytes (and `rowCount`, `fileCount`, `byteCount`) grow as its writers save files; once finished they are the committed totals. A scheduled run with nothing to export is listed too, `succeeded` with no rows (every event dataset with `rows` 0: "No rows"); no workflow runs for it.',
            additionalProperties: {
              type: 'object',
              properties: {
                status: {
                  type: 'string',
                  enum: ['running', 'succeeded', 'failed'],
                  description:
                    "The dataset's part of the run: `failed` when its writer failed after its retries (the run is then `failed`). Absent on runs recorded before it was reported.",
                },
                rows: { type: 'integer' },
                files: { type: 'integer' },
                bytes: { type: 'integer' },
                fromMs: {
                  type: 'integer',
                  description: 'Event datasets: start of the window exported, in epoch ms, exclusive.',
                },
                toMs: {
                  type: 'integer',
                  description: 'Event datasets: end of the window exported, in epoch ms, inclusive.',
                },
                snapshotDate: {
                  type: 'string',
                  format: 'date',
                  description: 'subscribers: the UTC day of the snapshot written.',
                },
                durationMs: {
                  type: 'integer',
                  minimum: 0,
                  description:
                    'The time its writers spent on the dataset in this run, in ms, summed over its spans (0 when it had nothing to write). Absent on runs recorded before it was reported.',
                },
              },
            },
          },
          error: { type: ['string', 'null'] },
          startedAt: { type: 'string', format: 'date-time' },
          finishedAt: { type: ['string', 'null'], format: 'date-time' },
        },
      },
      Backfill: {
        type: 'object',
        description: 'A range of recorded time exported on demand, beside the regular export.',
        properties: {
          id: { type: 'string', example: 'bf_0192f3a4b5c6d7e8f9a0b1c2' },
          destinationId: { type: 'string' },
          status: { type: 'string', enum: ['queued', 'running', 'succeeded', 'failed', 'cancelled'] },
          fullHistory: { type: 'boolean', description: 'True for "from": "earliest".' },
          datasets: { type: 'array', items: { type: 'string', enum: EVENT_DATASET_ENUM } },
          from: { type: 'string', format: 'date-time' },
          to: { type: 'string', format: 'date-time' },
          progress: {
            type: 'object',
            description:
              "Per dataset: windows of the export's grid done of total, and the rows, files and bytes written so far (they grow while it runs).",
            additionalProperties: {
              type: 'object',
              properties: {
                windowsDone: { type: 'integer' },
                windowsTotal: { type: 'integer' },
                rows: { type: 'integer' },
                files: { type: 'integer' },
                bytes: { type: 'integer' },
              },
              required: ['windowsDone', 'windowsTotal', 'rows', 'files', 'bytes'],
            },
          },
          error: { type: ['string', 'null'] },
          createdAt: { type: 'string', format: 'date-time' },
          startedAt: { type: ['string', 'null'], format: 'date-time' },
          finishedAt: { type: ['string', 'null'], format: 'date-time' },
        },
        required: ['id', 'status', 'datasets', 'from', 'to', 'progress'],
      },
    },
    securitySchemes: {
      bearerAuth: { type: 'http', scheme: 'bearer', description: 'API key passed as Bearer token' },
    },
  },
};
