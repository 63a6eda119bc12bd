/** `sms_events`: the first product's SMS events. */
import { z } from 'zod';
import { columnsFromSchema } from './columns.js';
import { id, optId, str, timestamp } from './fields.js';
import type { DatasetDefinition } from './types.js';

/** `sms_events.event_type`. */
export const SMS_EVENT_TYPES = ['sent', 'delivered', 'failed', 'clicked', 'opted_out', 'received'] as const;
export type SmsEventType = (typeof SMS_EVENT_TYPES)[number];

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

const fields = Object.keys(smsEventRowSchema.shape);

export const smsEvents: DatasetDefinition<'sms_events', SmsEventRow> = {
  name: 'sms_events',
  product: 'first',
  kind: 'events',
  semantics: 'append',
  summary:
    'SMS sends, deliveries, failures, clicks, opt-outs and replies: one row per event, in the window of its ' +
    'recorded time.',
  schema: smsEventRowSchema,
  storedFields: fields,
  schemaVersionInLine: true,
  columns: columnsFromSchema(
    [...fields, 'schema_version'],
    smsEventRowSchema.shape,
    {
      occurred_at: 'timestamp_millis_utc',
      recorded_at: 'timestamp_millis_utc',
      segments: 'int64',
      credits: 'double',
      schema_version: 'int32',
    },
    {
      id: 'Event id; deduplicate on it',
      event_type: `${SMS_EVENT_TYPES.map((t) => `\`${t}\``).join(', ')}`,
      occurred_at: 'When it happened',
      recorded_at: 'When Sluice recorded it (the export window key)',
      subscriber_id: 'Subscriber id',
      sms_send_id: 'One id per message: joins every event of the same SMS',
      campaign_id: 'The campaign that sent the SMS',
      sequence_step_id: 'The sequence step that sent the SMS',
      segments: 'For `sent`: message segments',
      credits: 'For `sent`: credits charged',
      error_code: 'For `failed`: the carrier error code',
      clicked_url: 'For `clicked`',
      schema_version: 'The row schema version (1)',
    },
  ),
  erasure: { subscriberId: ['subscriber_id'] },
  firstProductIngestRules: true,
};
