import { openapiDocument } from '@sluice/api';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

type Json = Record<string, unknown>;
const SCHEMA_ID = 'https://sluice.invalid/data-exports.openapi.json';

/** The repository's OpenAPI document (`packages/api/src/openapi/document.ts`), the one the API serves. */
export const openapi: Json = structuredClone(openapiDocument) as Json;

/**
 * A stricter copy for response checks: `DataExport`, `DataExportRun` and `Error` allow no property beyond
 * the documented ones, and a `DataExport` must carry all of them (its credentials as the document's `oneOf` says). The document leaves
 * `additionalProperties` open (clients must accept new fields); closing it here is what proves that no secret or ciphertext field leaks.
 */
function strictCopy(doc: Json): Json {
  const copy = structuredClone(doc);
  const schemas = (copy.components as Json).schemas as Record<string, Json>;
  for (const name of ['DataExport', 'DataExportRun', 'Error', 'InputIssue']) {
    const schema = schemas[name]!;
    schema.additionalProperties = false;
  }
  // Every field but the credentials, which come one way or the other (the document's own `oneOf`).
  const credentialFields = new Set(['accessKeyId', 'roleArn', 'externalId']);
  schemas.DataExport!.required = Object.keys(schemas.DataExport!.properties as Json).filter(
    (field) => !credentialFields.has(field),
  );
  return copy;
}

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema({ ...strictCopy(openapi), $id: SCHEMA_ID });
// The request schemas exactly as published (not closed), for the 422-versus-400 rule.
ajv.addSchema({ ...openapi, $id: `${SCHEMA_ID}.requests` });

function pointer(parts: string[]): string {
  return `/${parts.map((part) => part.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;
}

interface OperationRef {
  path: string;
  method: string;
  operation: Json;
}

function findOperation(operationId: string): OperationRef {
  for (const [path, item] of Object.entries(openapi.paths as Record<string, Json>)) {
    for (const [method, operation] of Object.entries(item)) {
      if ((operation as Json).operationId === operationId)
        return { path, method, operation: operation as Json };
    }
  }
  throw new Error(`No operation ${operationId} in the OpenAPI document`);
}

const cache = new Map<string, ValidateFunction>();

function validatorAt(id: string, parts: string[]): ValidateFunction {
  const ref = `${id}#${pointer(parts)}`;
  let validate = cache.get(ref);
  if (!validate) {
    const found = ajv.getSchema(ref);
    if (!found) throw new Error(`No schema at ${ref}`);
    validate = found;
    cache.set(ref, validate);
  }
  return validate;
}

/** Where a response's JSON schema lives: the operation's response for the status, following a `$ref`. */
function responseSchemaPath(operationId: string, status: number): string[] | undefined {
  const { path, method, operation } = findOperation(operationId);
  const responses = operation.responses as Record<string, Json>;
  const response = responses[String(status)];
  if (response === undefined) return undefined;
  const ref = response.$ref;
  if (typeof ref === 'string') {
    const parts = ref.replace(/^#\//, '').split('/');
    return [...parts, 'content', 'application/json', 'schema'];
  }
  return ['paths', path, method, 'responses', String(status), 'content', 'application/json', 'schema'];
}

/**
 * Validates a response body against the OpenAPI document: the operation's schema for the status, which the
 * document must list (every status an operation answers is documented, errors included). Pass `operationId`
 * undefined for a path or method that matches no operation (an unknown route, a 405): then only an `Error`
 * body with a 4xx or 5xx status is valid. Throws with ajv's errors when the body does not match.
 */
export function validateResponse(operationId: string | undefined, status: number, body: unknown): void {
  const parts =
    operationId === undefined ? ['components', 'schemas', 'Error'] : responseSchemaPath(operationId, status);
  if (parts === undefined || (operationId === undefined && status < 400)) {
    throw new Error(`${operationId ?? 'an unknown route'} does not document status ${status}`);
  }
  const validate = validatorAt(SCHEMA_ID, parts);
  if (!validate(body)) {
    throw new Error(
      `${operationId ?? 'unknown route'} ${status} body does not match the OpenAPI: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body)}`,
    );
  }
}

/** Whether a request body matches the operation's published request schema (formats included). */
export function requestMatchesSchema(operationId: string, body: unknown): boolean {
  const { path, method } = findOperation(operationId);
  const validate = validatorAt(`${SCHEMA_ID}.requests`, [
    'paths',
    path,
    method,
    'requestBody',
    'content',
    'application/json',
    'schema',
  ]);
  return validate(body) === true;
}

/** Each path template of the document as a regular expression: `{id}` matches one path segment. */
const PATH_TEMPLATES = Object.keys(openapi.paths as Json).map((template) => ({
  template,
  pattern: new RegExp(
    `^${template
      .split(/\{[^}]+\}/)
      .map((part) => part.replace(/[.*+?^$()|[\]\\]/g, '\\$&'))
      .join('[^/]+')}$`,
  ),
}));

/**
 * The operation a method and path of the API (under `/v1` or `/api/v1`) belongs to, if any, found from the
 * document's own path templates (not from the router, which is what is under test).
 */
export function operationFor(method: string, rawPath: string): string | undefined {
  const match = /^\/(?:api\/)?v1(\/.*)$/.exec(rawPath);
  if (!match) return undefined;
  const path = match[1] as string;
  const found = PATH_TEMPLATES.find(({ pattern }) => pattern.test(path));
  if (!found) return undefined;
  const item = (openapi.paths as Record<string, Json>)[found.template];
  const operation = item?.[method.toLowerCase()] as Json | undefined;
  return typeof operation?.operationId === 'string' ? operation.operationId : undefined;
}
