/**
 * The shape every dataset of the second product (PoliticalComms, reference 003 and 004) shares: files carry
 * exactly the reference's columns (no `id`, `recorded_at` or `schema_version`: the version is in the path);
 * the event log's line keeps Sluice's own row id (the dataset's natural key) and recorded time in front of them,
 * which the writers leave out of the files (`fileLineOf`). Pure: no AWS SDK.
 */
import { z } from 'zod';
import type { Dataset } from '../datasets.js';
import { type ColumnSpec, columnsFromSpecs, shapeFromSpecs } from './columns.js';
import { id, timestamp } from './fields.js';
import type { DatasetDefinition, ErasureKeys, ExportSemantics } from './types.js';

/** The fields of a second-product line in front of its columns: Sluice's row id and recorded time. */
export const SECOND_PRODUCT_INTERNAL_FIELDS = ['id', 'recorded_at'] as const;

/** A stored second-product row: Sluice's id and recorded time, then the columns. */
export type SecondProductRow<Columns> = { id: string; recorded_at: string } & Columns;

/** Builds a second-product dataset's definition from its columns (`specs`, in the reference's order). */
export function secondProductDataset<D extends Dataset, Columns extends Record<string, unknown>>(options: {
  name: D;
  semantics: ExportSemantics;
  summary: string;
  specs: readonly ColumnSpec[];
  /** The column that identifies a row (its natural key), Sluice's row id. */
  idField: keyof Columns & string;
  erasure: ErasureKeys;
}): DatasetDefinition<D, SecondProductRow<Columns>> & { idField: string } {
  const shape = shapeFromSpecs(options.specs);
  shape[options.idField] = id;
  const columns = columnsFromSpecs(options.specs);
  const names = columns.map((column) => column.name);
  const schema = z.object({ ...shape, recorded_at: timestamp }).transform((parsed) => {
    const row = parsed as Record<string, unknown>;
    const out: Record<string, unknown> = { id: row[options.idField], recorded_at: row.recorded_at };
    for (const name of names) out[name] = row[name];
    return out as SecondProductRow<Columns>;
  });
  return {
    name: options.name,
    product: 'second',
    kind: 'events',
    semantics: options.semantics,
    summary: options.summary,
    schema: schema as unknown as z.ZodType<SecondProductRow<Columns>>,
    storedFields: [...SECOND_PRODUCT_INTERNAL_FIELDS, ...names],
    schemaVersionInLine: false,
    columns,
    erasure: options.erasure,
    firstProductIngestRules: false,
    ownerField: 'organization_id',
    idField: options.idField,
  };
}
