/** `custom_events`: events producers track through the API, SDKs and integrations. */
import { z } from 'zod';
import { columnsFromSchema } from './columns.js';
import { attributes, id, optId, timestamp } from './fields.js';
import type { DatasetDefinition } from './types.js';

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

const fields = Object.keys(customEventRowSchema.shape);

export const customEvents: DatasetDefinition<'custom_events', CustomEventRow> = {
  name: 'custom_events',
  product: 'first',
  kind: 'events',
  semantics: 'append',
  summary:
    'Events tracked through the API, SDKs and integrations: one row per event, in the window of its recorded ' +
    'time.',
  schema: customEventRowSchema,
  storedFields: fields,
  schemaVersionInLine: true,
  columns: columnsFromSchema(
    [...fields, 'schema_version'],
    customEventRowSchema.shape,
    {
      occurred_at: 'timestamp_millis_utc',
      recorded_at: 'timestamp_millis_utc',
      properties: 'json',
      schema_version: 'int32',
    },
    {
      id: 'Event id; deduplicate on it',
      event_name: 'The event name, for example `order.placed`',
      occurred_at: 'When it happened',
      recorded_at: 'When Sluice recorded it (the export window key)',
      subscriber_id: 'Subscriber id',
      properties: 'The event properties, a JSON object (a JSON string in Parquet)',
      campaign_id: 'Attributed campaign',
      sequence_step_id: 'Attributed sequence step',
      schema_version: 'The row schema version (1)',
    },
  ),
  erasure: { subscriberId: ['subscriber_id'], email: ['email', 'properties.email'] },
  firstProductIngestRules: true,
};
