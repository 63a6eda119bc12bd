/**
 * The Parquet columns of each dataset: the fields of the JSON lines (`ROW_FIELDS`), in the same order,
 * with a type each. Timestamps are `TIMESTAMP(MILLIS, UTC)`, the snapshot date a `DATE`, integers and
 * numbers as such, `tags` a list of strings, the free-form objects (`properties`, `custom_attributes`) JSON
 * strings, `schema_version` an INT32; every other field is a UTF-8 string. A column is required when the row
 * schema never leaves it null.
 *
 * Pure: no AWS SDK.
 */
import type { Dataset } from './datasets.js';
import { ROW_FIELDS, ROW_SCHEMAS } from './rows.js';

/** The type of a column, as the Parquet encoder writes it. */
export type ParquetColumnType =
  | 'string'
  | 'timestamp_millis_utc'
  | 'date'
  | 'int32'
  | 'int64'
  | 'double'
  | 'json'
  | 'string_list';

/** One column of a dataset's Parquet files. */
export interface ParquetColumn {
  name: string;
  type: ParquetColumnType;
  /** Never null in a row (Parquet REQUIRED); a list is required with its elements required. */
  required: boolean;
}

/** Every column that is not a string, per dataset. */
const TYPED_FIELDS: Record<Dataset, Record<string, ParquetColumnType>> = {
  email_events: {
    occurred_at: 'timestamp_millis_utc',
    recorded_at: 'timestamp_millis_utc',
    schema_version: 'int32',
  },
  sms_events: {
    occurred_at: 'timestamp_millis_utc',
    recorded_at: 'timestamp_millis_utc',
    segments: 'int64',
    credits: 'double',
    schema_version: 'int32',
  },
  custom_events: {
    occurred_at: 'timestamp_millis_utc',
    recorded_at: 'timestamp_millis_utc',
    properties: 'json',
    schema_version: 'int32',
  },
  subscribers: {
    snapshot_date: 'date',
    tags: 'string_list',
    custom_attributes: 'json',
    created_at: 'timestamp_millis_utc',
    updated_at: 'timestamp_millis_utc',
    schema_version: 'int32',
  },
};

/** A field the row schema never leaves null (`schema_version` and `snapshot_date` are always written). */
function isRequired(dataset: Dataset, field: string): boolean {
  if (field === 'schema_version' || field === 'snapshot_date') return true;
  const shape = ROW_SCHEMAS[dataset].shape as Record<
    string,
    { safeParse(value: unknown): { success: boolean } }
  >;
  const schema = shape[field];
  if (schema === undefined) throw new Error(`${dataset}.${field} is not a field of the row schema`);
  const nullable = schema.safeParse(null);
  // `properties`, `custom_attributes` and `tags` turn null into `{}` or `[]`: never null in a row either.
  return !nullable.success || (nullable as { data?: unknown }).data !== null;
}

/** The Parquet columns of each dataset, in the order of its JSON lines' keys. */
export const PARQUET_COLUMNS: Record<Dataset, readonly ParquetColumn[]> = Object.fromEntries(
  (Object.keys(ROW_FIELDS) as Dataset[]).map((dataset) => [
    dataset,
    ROW_FIELDS[dataset].map((name) => ({
      name,
      type: TYPED_FIELDS[dataset][name] ?? 'string',
      required: isRequired(dataset, name),
    })),
  ]),
) as unknown as Record<Dataset, readonly ParquetColumn[]>;
