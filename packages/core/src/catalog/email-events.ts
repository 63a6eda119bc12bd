/** `email_events`: the first product's e-mail events. */
import { z } from 'zod';
import { columnsFromSchema } from './columns.js';
import { id, optId, str, timestamp } from './fields.js';
import type { DatasetDefinition } from './types.js';

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

const fields = Object.keys(emailEventRowSchema.shape);

export const emailEvents: DatasetDefinition<'email_events', EmailEventRow> = {
  name: 'email_events',
  product: 'first',
  kind: 'events',
  semantics: 'append',
  summary:
    'Sends, deliveries, delays, bounces, complaints, opens, clicks, unsubscribes and transport failures: ' +
    'one row per event, in the window of its recorded time.',
  schema: emailEventRowSchema,
  storedFields: fields,
  schemaVersionInLine: true,
  columns: columnsFromSchema(
    [...fields, 'schema_version'],
    emailEventRowSchema.shape,
    { occurred_at: 'timestamp_millis_utc', recorded_at: 'timestamp_millis_utc', schema_version: 'int32' },
    {
      id: 'Event id; deduplicate on it',
      event_type: `${EMAIL_EVENT_TYPES.map((t) => `\`${t}\``).join(', ')}`,
      occurred_at: 'When it happened',
      recorded_at: 'When Sluice recorded it (the export window key)',
      subscriber_id: 'Recipient subscriber id',
      email: 'Recipient e-mail address',
      email_send_id: 'One id per message: joins every event of the same e-mail',
      message_type: '`campaign`, `sequence` or `transactional`',
      campaign_id: 'The campaign that sent the e-mail',
      sequence_step_id: 'The sequence step that sent the e-mail',
      transactional_email_id: 'Transactional template id',
      email_name: "The e-mail's subject or name",
      ab_test_id: 'A/B test',
      ab_test_variant_id: 'A/B test variant',
      bounce_type: 'For `bounced`: `Permanent` or `Transient`',
      bounce_sub_type: 'For `bounced`: the detail',
      complaint_type: 'For `complained`',
      clicked_url: 'For `clicked`',
      ip_address: 'For opens and clicks, when available',
      user_agent: 'For opens and clicks, when available',
      country_code: 'For opens and clicks, when available',
      recipient_domain: 'For example `gmail.com`',
      mailbox_provider: 'For example `gmail`',
      schema_version: 'The row schema version (1)',
    },
  ),
  erasure: { subscriberId: ['subscriber_id'], email: ['email'] },
  firstProductIngestRules: true,
};
