/**
 * What the catalogue knows of each dataset (see `index.ts`). Pure: no AWS SDK.
 */
import type { z } from 'zod';
import type { Dataset } from '../datasets.js';

/** The type of a column, as the Parquet encoder writes it. */
export type ParquetColumnType =
  | 'string'
  | 'timestamp_millis_utc'
  | 'date'
  | 'int32'
  | 'int64'
  | 'double'
  | 'boolean'
  | 'json'
  | 'string_list';

/** One column of a dataset's Parquet files. */
export interface ParquetColumn {
  name: string;
  type: ParquetColumnType;
  /** Never null in a row (Parquet REQUIRED); a list is required with its elements required. */
  required: boolean;
}

/** A column as the catalogue documents it. */
export interface ColumnDefinition extends ParquetColumn {
  /** One line for the customer-facing reference. */
  doc: string;
}

/**
 * How a dataset's rows reach the files:
 * - `append`: every row recorded once, exported in the window of its recorded time;
 * - `current_row`: Sluice keeps one current row per key; the row is exported again when it changes
 *   (`message_events`: per `message_id`, on a status change);
 * - `once`: one row per key, exported once, when it is complete (`project_summary`: on completion);
 * - `snapshot`: the whole current table, once per UTC day (`subscribers`).
 */
export type ExportSemantics = 'append' | 'current_row' | 'once' | 'snapshot';

/**
 * The fields of a row that identify a person, by kind: an erasure of a person removes every row whose field of
 * a kind holds one of the person's identifiers of that kind.
 */
export interface ErasureKeys {
  subscriberId?: readonly string[];
  email?: readonly string[];
  phone?: readonly string[];
  contactId?: readonly string[];
}

/** Everything Sluice knows about one dataset. */
export interface DatasetDefinition<D extends Dataset = Dataset, Row = unknown> {
  name: D;
  /** `first`: Sequenzy's datasets; `second`: PoliticalComms' (reference 003, 004). */
  product: 'first' | 'second';
  /** Recorded-time windows of events, or a daily snapshot. */
  kind: 'events' | 'snapshot';
  semantics: ExportSemantics;
  /** One paragraph for the customer-facing reference. */
  summary: string;
  /** Validates and normalizes one input into the stored row (its fields in {@link storedFields} order). */
  schema: z.ZodType<Row>;
  /** The keys of the line the event log (or subscribers table) stores, in order, `schema_version` excluded. */
  storedFields: readonly string[];
  /** The first product's lines end with `schema_version`; the second's carry none (the version is in the path). */
  schemaVersionInLine: boolean;
  /** The columns of the files, in order, with their Parquet types and documentation. */
  columns: readonly ColumnDefinition[];
  /** The fields of a row that identify a person. */
  erasure: ErasureKeys;
  /**
   * Ingest: the first product's rules (test sends, history imports and rows more than 7 days late dropped;
   * `test`, `import` and `source` are envelope fields), or none of them (`second`).
   */
  firstProductIngestRules: boolean;
  /** A column Sluice fills with the owning workspace's id, whatever the producer sent. */
  ownerField?: string;
}

/** A sample row of a second-product dataset: its columns, and when Sluice would record it (epoch ms). */
export interface SampleRow {
  atMs: number;
  row: Record<string, unknown>;
}
