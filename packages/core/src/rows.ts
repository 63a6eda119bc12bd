/**
 * Row schemas of the datasets, exactly as the product references list them, and their serialization. Each
 * dataset's schema and fields are in its module of the catalogue (`catalog/`); this module is their one
 * serialization.
 *
 * Warehouses want stable columns, so every serialized row carries every field of its schema, in a fixed key
 * order, `null` when absent, and for the first product `schema_version` last. A row is serialized once, at
 * ingest; the event log stores that line and the writers copy it into files byte for byte (the second product's
 * lines without Sluice's `id` and `recorded_at`: `fileLineOf`).
 *
 * Pure: no AWS SDK.
 */
import type { z } from 'zod';
import {
  CATALOG,
  type ClickEventRow,
  type CustomEventRow,
  customEventRowSchema,
  type EmailEventRow,
  emailEventRowSchema,
  type MessageEventRow,
  type OptOutEventRow,
  type ProjectSummaryRow,
  type SmsEventRow,
  type SubscriberRow,
  smsEventRowSchema,
  subscriberRowSchema,
} from './catalog/index.js';
import type { Dataset, FirstProductEventDataset } from './datasets.js';
import { SCHEMA_VERSION } from './datasets.js';

export * from './catalog/index.js';

/** The row type of each dataset. */
export interface RowByDataset {
  email_events: EmailEventRow;
  sms_events: SmsEventRow;
  custom_events: CustomEventRow;
  subscribers: SubscriberRow;
  message_events: MessageEventRow;
  project_summary: ProjectSummaryRow;
  opt_out_events: OptOutEventRow;
  click_events: ClickEventRow;
}

/** The zod schema of each dataset's row (for subscribers, the stored row without `snapshot_date`). */
export const ROW_SCHEMAS = {
  email_events: emailEventRowSchema,
  sms_events: smsEventRowSchema,
  custom_events: customEventRowSchema,
  subscribers: subscriberRowSchema,
  message_events: CATALOG.message_events.schema,
  project_summary: CATALOG.project_summary.schema,
  opt_out_events: CATALOG.opt_out_events.schema,
  click_events: CATALOG.click_events.schema,
} as const satisfies Record<Dataset, z.ZodType>;

/**
 * The keys of each file row, in order (the columns). Subscribers' list is the snapshot row's, `snapshot_date`
 * first; the stored subscriber line is the same without it.
 */
export const ROW_FIELDS: Record<Dataset, readonly string[]> = Object.fromEntries(
  Object.values(CATALOG).map((definition) => [definition.name, definition.columns.map((c) => c.name)]),
) as unknown as Record<Dataset, readonly string[]>;

/** The outcome of {@link parseRow}: the normalized row, or a reason naming the fields (never their values). */
export type ParseRowResult<D extends Dataset> =
  | { ok: true; row: RowByDataset[D] }
  | { ok: false; reason: string };

/**
 * Validates and normalizes one row: timestamps to UTC ISO, absent optional fields to `null` (objects to `{}`,
 * tags to `[]`), phone numbers to E.164, unknown fields dropped. The reason, on failure, names fields and rules,
 * never values, so it can be logged.
 */
export function parseRow<D extends Dataset>(dataset: D, input: unknown): ParseRowResult<D> {
  const result = ROW_SCHEMAS[dataset].safeParse(input);
  if (result.success) return { ok: true, row: result.data as RowByDataset[D] };
  return { ok: false, reason: describeIssues(result.error.issues) };
}

/** Joins zod issues into one line: `event_type: Invalid option...; occurred_at: Invalid input`. */
export function describeIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(row)'}: ${issue.message}`)
    .join('; ');
}

/**
 * Serializes a row as one JSON line (no trailing newline): every stored field of the dataset in its fixed
 * order, `null` when absent, then `schema_version` (the first product). Subscriber rows are serialized without
 * `snapshot_date`.
 */
export function serializeRow<D extends Dataset>(dataset: D, row: RowByDataset[D]): string {
  const definition = CATALOG[dataset];
  const source = row as unknown as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const field of definition.storedFields) out[field] = source[field] ?? null;
  if (definition.schemaVersionInLine) out.schema_version = SCHEMA_VERSION;
  return JSON.stringify(out);
}

/**
 * Adds `snapshot_date` (`YYYY-MM-DD`) in front of a stored subscriber line, giving the snapshot row, without
 * parsing it.
 */
export function withSnapshotDate(line: string, snapshotDate: string): string {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(snapshotDate)) throw new RangeError(`Not a date: ${snapshotDate}`);
  return `{"snapshot_date":"${snapshotDate}",${line.slice(1)}`;
}

/** Event datasets whose rows carry `occurred_at` and `recorded_at`. */
export type EventRow = RowByDataset[FirstProductEventDataset];
