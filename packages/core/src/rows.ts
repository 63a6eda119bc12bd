/**
 * Row schemas of the four datasets, exactly as the product reference lists them, and their serialization.
 *
 * Warehouses want stable columns, so every serialized row carries every field of its schema, in a fixed key
 * order, `null` when absent, and `schema_version` last. A row is serialized once, at ingest; the event log
 * stores that line and the writers copy it into files byte for byte.
 *
 * Pure: no AWS SDK.
 */
import { z } from 'zod';
import type { Dataset, EventDataset } from './datasets.js';
import { SCHEMA_VERSION } from './datasets.js';

/** `email_events.event_type`. */
export const EMAIL_EVENT_TYPES = [
  'sent',
  'delivered',
  'delivery_delayed',
  'bounced',
  'complained',
  'opened',
  'clicked',
  'unsubscribed',
  'failed',
] as const;
export type EmailEventType = (typeof EMAIL_EVENT_TYPES)[number];

/** `email_events.message_type`. */
export const MESSAGE_TYPES = ['campaign', 'sequence', 'transactional'] as const;
export type MessageType = (typeof MESSAGE_TYPES)[number];

/** `sms_events.event_type`. */
export const SMS_EVENT_TYPES = ['sent', 'delivered', 'failed', 'clicked', 'opted_out', 'received'] as const;
export type SmsEventType = (typeof SMS_EVENT_TYPES)[number];

/**
 * Ids (event ids, subscriber ids): 1 to 256 printable ASCII characters, no spaces. Keeping them ASCII makes
 * JavaScript string order equal DynamoDB's byte order, which the event log reader's shard merge relies on.
 */
export const ID_PATTERN = /^[\x21-\x7e]{1,256}$/;

const id = z.string().regex(ID_PATTERN, 'must be 1 to 256 printable ASCII characters without spaces');

/**
 * A timestamp: an ISO 8601 string with `Z` or an offset, or epoch milliseconds. Always normalized to
 * `YYYY-MM-DDTHH:mm:ss.sssZ` (UTC), so every row spells time the same way.
 */
export const timestamp = z
  .union([z.iso.datetime({ offset: true }), z.number().int().nonnegative()])
  .transform((value, ctx) => {
    const ms = typeof value === 'number' ? value : Date.parse(value);
    if (!Number.isFinite(ms) || ms < 0 || ms > 8_640_000_000_000_000) {
      ctx.addIssue({ code: 'custom', message: 'is not a valid time' });
      return z.NEVER;
    }
    return new Date(ms).toISOString();
  });

const str = (max: number) =>
  z
    .string()
    .max(max)
    .nullish()
    .transform((v) => v ?? null);
const optId = id.nullish().transform((v) => v ?? null);
const attributes = z
  .record(z.string(), z.unknown())
  .nullish()
  .transform((v) => v ?? {});

/** An `email_events` row. */
export const emailEventRowSchema = z.object({
  id,
  event_type: z.enum(EMAIL_EVENT_TYPES),
  occurred_at: timestamp,
  recorded_at: timestamp,
  subscriber_id: optId,
  email: z.string().min(3).max(320),
  email_send_id: id,
  message_type: z.enum(MESSAGE_TYPES),
  campaign_id: optId,
  sequence_step_id: optId,
  transactional_email_id: optId,
  email_name: str(1000),
  ab_test_id: optId,
  ab_test_variant_id: optId,
  bounce_type: str(64),
  bounce_sub_type: str(256),
  complaint_type: str(256),
  clicked_url: str(8192),
  ip_address: str(64),
  user_agent: str(2048),
  country_code: str(8),
  recipient_domain: str(255),
  mailbox_provider: str(255),
});
export type EmailEventRow = z.output<typeof emailEventRowSchema>;

/** An `sms_events` row. */
export const smsEventRowSchema = z.object({
  id,
  event_type: z.enum(SMS_EVENT_TYPES),
  occurred_at: timestamp,
  recorded_at: timestamp,
  subscriber_id: optId,
  sms_send_id: optId,
  campaign_id: optId,
  sequence_step_id: optId,
  segments: z
    .number()
    .int()
    .nonnegative()
    .nullish()
    .transform((v) => v ?? null),
  credits: z
    .number()
    .nonnegative()
    .nullish()
    .transform((v) => v ?? null),
  error_code: z
    .union([z.string().max(256), z.number()])
    .nullish()
    .transform((v) => (v === null || v === undefined ? null : String(v))),
  clicked_url: str(8192),
});
export type SmsEventRow = z.output<typeof smsEventRowSchema>;

/** A `custom_events` row. `properties` is an object, `{}` when absent. */
export const customEventRowSchema = z.object({
  id,
  event_name: z.string().min(1).max(256),
  occurred_at: timestamp,
  recorded_at: timestamp,
  subscriber_id: optId,
  properties: attributes,
  campaign_id: optId,
  sequence_step_id: optId,
});
export type CustomEventRow = z.output<typeof customEventRowSchema>;

/**
 * A subscriber as the subscribers table stores it: the snapshot row without `snapshot_date`, which the
 * snapshot writer adds (see {@link withSnapshotDate}).
 */
export const subscriberRowSchema = z.object({
  id,
  email: str(320),
  external_id: str(256),
  first_name: str(256),
  last_name: str(256),
  phone: str(64),
  status: z.string().min(1).max(64),
  sms_status: str(64),
  tags: z
    .array(z.string().max(256))
    .nullish()
    .transform((v) => v ?? []),
  custom_attributes: attributes,
  created_at: timestamp,
  updated_at: timestamp,
});
export type SubscriberRow = z.output<typeof subscriberRowSchema>;

/** The row type of each dataset. */
export interface RowByDataset {
  email_events: EmailEventRow;
  sms_events: SmsEventRow;
  custom_events: CustomEventRow;
  subscribers: SubscriberRow;
}

/** The zod schema of each dataset's row (for subscribers, the stored row without `snapshot_date`). */
export const ROW_SCHEMAS = {
  email_events: emailEventRowSchema,
  sms_events: smsEventRowSchema,
  custom_events: customEventRowSchema,
  subscribers: subscriberRowSchema,
} as const satisfies Record<Dataset, z.ZodType>;

/**
 * The keys of each serialized row, in order. Subscribers' list is the snapshot row's, `snapshot_date` first;
 * the stored subscriber line is the same without it.
 */
export const ROW_FIELDS: Record<Dataset, readonly string[]> = {
  email_events: [...Object.keys(emailEventRowSchema.shape), 'schema_version'],
  sms_events: [...Object.keys(smsEventRowSchema.shape), 'schema_version'],
  custom_events: [...Object.keys(customEventRowSchema.shape), 'schema_version'],
  subscribers: ['snapshot_date', ...Object.keys(subscriberRowSchema.shape), 'schema_version'],
};

const STORED_FIELDS: Record<Dataset, readonly string[]> = {
  email_events: Object.keys(emailEventRowSchema.shape),
  sms_events: Object.keys(smsEventRowSchema.shape),
  custom_events: Object.keys(customEventRowSchema.shape),
  subscribers: Object.keys(subscriberRowSchema.shape),
};

/** The outcome of {@link parseRow}: the normalized row, or a reason naming the fields (never their values). */
export type ParseRowResult<D extends Dataset> =
  | { ok: true; row: RowByDataset[D] }
  | { ok: false; reason: string };

/**
 * Validates and normalizes one row: timestamps to UTC ISO, absent optional fields to `null` (objects to `{}`,
 * tags to `[]`), unknown fields dropped. The reason, on failure, names fields and rules, never values,
 * so it can be logged.
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
 * Serializes a row as one JSON line (no trailing newline): every field of the schema in its fixed order,
 * `null` when absent, then `schema_version`. Subscriber rows are serialized without `snapshot_date`.
 */
export function serializeRow<D extends Dataset>(dataset: D, row: RowByDataset[D]): string {
  const source = row as unknown as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const field of STORED_FIELDS[dataset]) out[field] = source[field] ?? null;
  out.schema_version = SCHEMA_VERSION;
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
export type EventRow = RowByDataset[EventDataset];
