/**
 * Builds a dataset's columns from its row schema (the first product's datasets) or from a column list (the
 * second's). Pure: no AWS SDK.
 */
import { z } from 'zod';
import { int32, nullable, timestamp } from './fields.js';
import type { ColumnDefinition, ParquetColumnType } from './types.js';

type Shape = Record<string, { safeParse(value: unknown): { success: boolean } }>;

/** A field the row schema never leaves null (`schema_version` and `snapshot_date` are always written). */
function isRequired(shape: Shape, field: string): boolean {
  if (field === 'schema_version' || field === 'snapshot_date') return true;
  const schema = shape[field];
  if (schema === undefined) throw new Error(`${field} is not a field of the row schema`);
  const nullable = schema.safeParse(null);
  // `properties`, `custom_attributes` and `tags` turn null into `{}` or `[]`: never null in a row either.
  return !nullable.success || (nullable as { data?: unknown }).data !== null;
}

/**
 * The columns of a first-product dataset: `fields` in order, typed by `typed` (a string otherwise), required
 * when the row schema never leaves the field null; every field documented in `docs`.
 */
export function columnsFromSchema(
  fields: readonly string[],
  shape: Shape,
  typed: Readonly<Record<string, ParquetColumnType>>,
  docs: Readonly<Record<string, string>>,
): ColumnDefinition[] {
  return fields.map((name) => {
    const doc = docs[name];
    if (doc === undefined) throw new Error(`${name} is not documented`);
    return { name, type: typed[name] ?? 'string', required: isRequired(shape, name), doc };
  });
}

/**
 * A second-product column: `[name, type, nullable, doc, schema?]`. Without `schema` the type's default rule
 * applies (a string of at most 8,192 characters, an int32, a boolean, a timestamp).
 */
export type ColumnSpec = readonly [
  name: string,
  type: 'string' | 'int32' | 'boolean' | 'timestamp_millis_utc',
  nullable: boolean,
  doc: string,
  schema?: z.ZodType,
];

function defaultRule(type: ColumnSpec[1]): z.ZodType {
  switch (type) {
    case 'string':
      return z.string().max(8192);
    case 'int32':
      return int32;
    case 'boolean':
      return z.boolean();
    case 'timestamp_millis_utc':
      return timestamp;
  }
}

/** The columns of a list of specs. */
export function columnsFromSpecs(specs: readonly ColumnSpec[]): ColumnDefinition[] {
  return specs.map(([name, type, isNullable, doc]) => ({ name, type, required: !isNullable, doc }));
}

/** The zod shape of a list of specs: each column's rule, `null` when absent for a nullable one. */
export function shapeFromSpecs(specs: readonly ColumnSpec[]): Record<string, z.ZodType> {
  return Object.fromEntries(
    specs.map(([name, type, isNullable, , schema]) => {
      const rule = schema ?? defaultRule(type);
      return [name, isNullable ? nullable(rule) : rule];
    }),
  );
}
