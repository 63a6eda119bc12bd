import { Validator } from '@seriousme/openapi-schema-validator';
import { RUN_STATUSES } from '@sluice/control';
import {
  BACKFILL_STATUSES,
  COMPRESSIONS,
  DATASETS,
  DESTINATION_STATUSES,
  EVENT_DATASETS,
  EXPORT_FORMATS,
  LAYOUTS,
  FREQUENCIES,
  PROVIDERS,
  SERVER_SIDE_ENCRYPTIONS,
} from '@sluice/core';
import { CONNECTION_WARNING_CODES } from '@sluice/sinks';
import { describe, expect, it } from 'vitest';
import { matchRoute, ROUTES } from '../http.js';
import { type JsonObject, type JsonValue, openapiDocument } from './document.js';

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Every operation of the document: method, path template and operationId. */
function documentedOperations(): { method: string; path: string; operationId: string }[] {
  const paths = openapiDocument.paths as Record<string, JsonObject>;
  return Object.entries(paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => HTTP_METHODS.includes(method))
      .map(([method, operation]) => ({
        method: method.toUpperCase(),
        path,
        operationId: String((operation as JsonObject).operationId),
      })),
  );
}

/** Every `enum` of the document, with the property it constrains (the nearest name under `properties`). */
function enums(
  node: JsonValue,
  property = '',
  at = '',
): { property: string; at: string; values: JsonValue[] }[] {
  if (node === null || typeof node !== 'object') return [];
  if (Array.isArray(node)) return node.flatMap((child, index) => enums(child, property, `${at}/${index}`));
  const found = Array.isArray(node.enum) ? [{ property, at, values: node.enum }] : [];
  for (const [key, child] of Object.entries(node)) {
    if (key === 'enum') continue;
    if (key === 'properties' && child !== null && typeof child === 'object' && !Array.isArray(child)) {
      for (const [name, schema] of Object.entries(child)) {
        found.push(...enums(schema, name, `${at}/properties/${name}`));
      }
    } else {
      found.push(...enums(child, property, `${at}/${key}`));
    }
  }
  return found;
}

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    // Prepare
    const validator = new Validator();

    // Act
    const result = await validator.validate(structuredClone(openapiDocument));

    // Assess
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('documents exactly the operations the router serves, at their paths and methods', () => {
    // Prepare: a path of each template, with an id of the API's shape
    const sample = (template: string) =>
      `/api/v1${template.replace('{id}', `exp_${'0'.repeat(24)}`).replace('{backfillId}', `bf_${'0'.repeat(24)}`)}`;

    // Act
    const documented = documentedOperations().filter((op) => op.operationId !== 'getOpenApiDocument');
    const served = documented.map((op) => {
      const match = matchRoute(sample(op.path));
      return match && ROUTES[match.route]?.[op.method]?.operationId;
    });
    const routed = Object.values(ROUTES).flatMap((methods) =>
      Object.values(methods).map((operation) => operation?.operationId),
    );

    // Assess
    expect(served).toEqual(documented.map((op) => op.operationId));
    expect(routed.sort()).toEqual(documented.map((op) => op.operationId).sort());
  });

  /** The backfill enums: event datasets only, the backfill statuses, and `"from": "earliest"`. */
  const BACKFILL_ENUMS: Record<string, readonly string[]> = {
    '/paths//data-exports/{id}/backfills/post/requestBody/content/application/json/schema/properties/datasets/items':
      EVENT_DATASETS,
    '/paths//data-exports/{id}/backfills/post/requestBody/content/application/json/schema/properties/from/oneOf/1':
      ['earliest'],
    '/components/schemas/Backfill/properties/datasets/items': EVENT_DATASETS,
    '/components/schemas/Backfill/properties/status': BACKFILL_STATUSES,
  };

  it('lists the same values as the code in every enum', () => {
    // Prepare: the constant each enum mirrors, by the property it constrains
    const byProperty: Record<string, readonly string[]> = {
      datasets: DATASETS,
      frequency: FREQUENCIES,
      provider: PROVIDERS,
      format: EXPORT_FORMATS,
      layout: LAYOUTS,
      compression: COMPRESSIONS,
      code: CONNECTION_WARNING_CODES,
      serverSideEncryption: [...SERVER_SIDE_ENCRYPTIONS, null] as unknown as readonly string[],
    };

    // Act
    const found = enums(openapiDocument);

    // Assess: a new enum needs its constant here, so that the two cannot drift apart
    expect(found.length).toBeGreaterThan(0);
    for (const { property, at, values } of found) {
      const expected =
        at === '/components/schemas/DataExport/properties/status'
          ? DESTINATION_STATUSES
          : at === '/components/schemas/DataExportRun/properties/status' ||
              at ===
                '/components/schemas/DataExportRun/properties/stats/additionalProperties/properties/status'
            ? RUN_STATUSES
            : (BACKFILL_ENUMS[at] ?? byProperty[property]);
      expect(expected, `no constant for the enum at ${at}`).toBeDefined();
      expect(values, at).toEqual([...(expected ?? [])]);
    }
  });
});
