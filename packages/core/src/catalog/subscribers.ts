/** `subscribers`: the first product's daily snapshot of every subscriber. */
import { z } from 'zod';
import { columnsFromSchema } from './columns.js';
import { attributes, id, str, timestamp } from './fields.js';
import type { DatasetDefinition } from './types.js';

/**
 * A subscriber as the subscribers table stores it: the snapshot row without `snapshot_date`, which the
 * snapshot writer adds (see `withSnapshotDate`).
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

const fields = Object.keys(subscriberRowSchema.shape);

export const subscribers: DatasetDefinition<'subscribers', SubscriberRow> = {
  name: 'subscribers',
  product: 'first',
  kind: 'snapshot',
  semantics: 'snapshot',
  summary:
    'Every subscriber with status, tags and custom attributes: one full snapshot per UTC day, under ' +
    '`date=` of the snapshot day, with a `_SUCCESS` marker written last.',
  schema: subscriberRowSchema,
  storedFields: fields,
  schemaVersionInLine: true,
  columns: columnsFromSchema(
    ['snapshot_date', ...fields, 'schema_version'],
    subscriberRowSchema.shape,
    {
      snapshot_date: 'date',
      tags: 'string_list',
      custom_attributes: 'json',
      created_at: 'timestamp_millis_utc',
      updated_at: 'timestamp_millis_utc',
      schema_version: 'int32',
    },
    {
      snapshot_date: 'The UTC day of the snapshot',
      id: 'Subscriber id',
      email: 'E-mail address',
      external_id: 'Your own id for the subscriber',
      first_name: 'First name',
      last_name: 'Last name',
      phone: 'Phone number',
      status: 'For example `active`, `unsubscribed`, `bounced`',
      sms_status: 'SMS subscription status',
      tags: 'Tags, a list of strings',
      custom_attributes: 'Custom attributes, a JSON object (a JSON string in Parquet)',
      created_at: 'When the subscriber was created',
      updated_at: 'Last change to the subscriber',
      schema_version: 'The row schema version (1)',
    },
  ),
  erasure: { subscriberId: ['id'], email: ['email'], phone: ['phone'] },
  firstProductIngestRules: true,
};
