/**
 * The Parquet columns of each dataset: the columns of its catalogue module (`catalog/`), in the order of its
 * file lines' keys, with a type each. Timestamps are `TIMESTAMP(MILLIS, UTC)`, the snapshot date a `DATE`,
 * integers, numbers and booleans as such, `tags` a list of strings, the free-form objects (`properties`,
 * `custom_attributes`) JSON strings, `schema_version` an INT32; every other field is a UTF-8 string. A column
 * is required when the dataset never leaves it null.
 *
 * Pure: no AWS SDK.
 */
import { CATALOG, type ParquetColumn } from './catalog/index.js';
import type { Dataset } from './datasets.js';

export type { ParquetColumn, ParquetColumnType } from './catalog/index.js';

/** The Parquet columns of each dataset, in the order of its file lines' keys. */
export const PARQUET_COLUMNS: Record<Dataset, readonly ParquetColumn[]> = Object.fromEntries(
  Object.values(CATALOG).map((definition) => [
    definition.name,
    definition.columns.map(({ name, type, required }) => ({ name, type, required })),
  ]),
) as unknown as Record<Dataset, readonly ParquetColumn[]>;
