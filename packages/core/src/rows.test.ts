import { describe, expect, it } from 'vitest';
import { parseRow, ROW_FIELDS, serializeRow, withSnapshotDate } from './rows.js';

/** The fields of each dataset as the product reference lists them (000, "Row schemas"). */
const REFERENCE_FIELDS = {
  email_events: [
    'id',
    'event_type',
    'occurred_at',
    'recorded_at',
    'subscriber_id',
    'email',
    'email_send_id',
    'message_type',
    'campaign_id',
    'sequence_step_id',
    'transactional_email_id',
    'email_name',
    'ab_test_id',
    'ab_test_variant_id',
    'bounce_type',
    'bounce_sub_type',
    'complaint_type',
    'clicked_url',
    'ip_address',
    'user_agent',
    'country_code',
    'recipient_domain',
    'mailbox_provider',
  ],
  sms_events: [
    'id',
    'event_type',
    'occurred_at',
    'recorded_at',
    'subscriber_id',
    'sms_send_id',
    'campaign_id',
    'sequence_step_id',
    'segments',
    'credits',
    'error_code',
    'clicked_url',
  ],
  custom_events: [
    'id',
    'event_name',
    'occurred_at',
    'recorded_at',
    'subscriber_id',
    'properties',
    'campaign_id',
    'sequence_step_id',
  ],
  subscribers: [
    'snapshot_date',
    'id',
    'email',
    'external_id',
    'first_name',
    'last_name',
    'phone',
    'status',
    'sms_status',
    'tags',
    'custom_attributes',
    'created_at',
    'updated_at',
  ],
} as const;

const minimal = {
  email_events: {
    id: 'evt_1',
    event_type: 'opened',
    occurred_at: '2026-09-30T10:00:00Z',
    recorded_at: '2026-09-30T10:00:01.250Z',
    email: 'ada@example.com',
    email_send_id: 'send_1',
    message_type: 'campaign',
  },
  sms_events: {
    id: 'sms_1',
    event_type: 'opted_out',
    occurred_at: '2026-09-30T10:00:00Z',
    recorded_at: '2026-09-30T10:00:00Z',
  },
  custom_events: {
    id: 'ce_1',
    event_name: 'order.placed',
    occurred_at: 1_790_000_000_000,
    recorded_at: 1_790_000_000_500,
  },
  subscribers: {
    id: 'sub_1',
    status: 'active',
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-09-30T00:00:00+02:00',
  },
} as const;

describe('row schemas', () => {
  it.each(Object.keys(REFERENCE_FIELDS) as (keyof typeof REFERENCE_FIELDS)[])(
    '%s serializes every reference field, in order, then schema_version',
    (dataset) => {
      // Prepare
      const parsed = parseRow(dataset, minimal[dataset]);
      if (!parsed.ok) throw new Error(parsed.reason);

      // Act
      let line = serializeRow(dataset, parsed.row);
      if (dataset === 'subscribers') line = withSnapshotDate(line, '2026-09-30');

      // Assess
      const object = JSON.parse(line) as Record<string, unknown>;
      expect(Object.keys(object)).toEqual([...REFERENCE_FIELDS[dataset], 'schema_version']);
      expect(ROW_FIELDS[dataset]).toEqual(Object.keys(object));
      expect(object.schema_version).toBe(1);
    },
  );

  it('emits absent optional fields as null, objects as {} and tags as []', () => {
    const email = parseRow('email_events', minimal.email_events);
    const custom = parseRow('custom_events', minimal.custom_events);
    const subscriber = parseRow('subscribers', minimal.subscribers);
    if (!email.ok || !custom.ok || !subscriber.ok) throw new Error('fixtures must parse');

    const emailRow = JSON.parse(serializeRow('email_events', email.row));
    expect(emailRow.clicked_url).toBeNull();
    expect(emailRow.subscriber_id).toBeNull();
    expect(JSON.parse(serializeRow('custom_events', custom.row)).properties).toEqual({});
    const subscriberRow = JSON.parse(serializeRow('subscribers', subscriber.row));
    expect(subscriberRow.tags).toEqual([]);
    expect(subscriberRow.custom_attributes).toEqual({});
    expect(subscriberRow.email).toBeNull();
  });

  it('normalizes timestamps to UTC ISO with milliseconds', () => {
    const custom = parseRow('custom_events', minimal.custom_events);
    const subscriber = parseRow('subscribers', minimal.subscribers);
    if (!custom.ok || !subscriber.ok) throw new Error('fixtures must parse');
    expect(custom.row.occurred_at).toBe(new Date(1_790_000_000_000).toISOString());
    expect(subscriber.row.updated_at).toBe('2026-09-29T22:00:00.000Z');
    expect(subscriber.row.created_at).toBe('2026-01-01T00:00:00.000Z');
  });

  it('drops unknown fields and keeps a fixed order whatever the input order', () => {
    const a = parseRow('sms_events', { ...minimal.sms_events, segments: 2, extra: 'x' });
    const b = parseRow('sms_events', { segments: 2, ...minimal.sms_events });
    if (!a.ok || !b.ok) throw new Error('fixtures must parse');
    expect(serializeRow('sms_events', a.row)).toBe(serializeRow('sms_events', b.row));
    expect(serializeRow('sms_events', a.row)).not.toContain('extra');
  });

  it('refuses bad enums, times and ids with a reason naming the field, not the value', () => {
    const badType = parseRow('email_events', { ...minimal.email_events, event_type: 'viewed' });
    const badMessage = parseRow('email_events', { ...minimal.email_events, message_type: 'newsletter' });
    const badTime = parseRow('sms_events', { ...minimal.sms_events, occurred_at: 'yesterday' });
    const badId = parseRow('custom_events', { ...minimal.custom_events, id: 'has space' });
    const missing = parseRow('email_events', { ...minimal.email_events, email: undefined });

    expect(badType).toMatchObject({ ok: false, reason: expect.stringMatching(/^event_type: /) });
    expect(badMessage).toMatchObject({ ok: false, reason: expect.stringMatching(/^message_type: /) });
    expect(badTime).toMatchObject({ ok: false, reason: expect.stringMatching(/^occurred_at: /) });
    expect(badId).toMatchObject({ ok: false, reason: expect.stringMatching(/^id: /) });
    expect(missing).toMatchObject({ ok: false, reason: expect.stringMatching(/^email: /) });
    if (!badType.ok) expect(badType.reason).not.toContain('viewed');
  });

  it('accepts every enum value of the reference', () => {
    for (const event_type of [
      'sent',
      'delivered',
      'delivery_delayed',
      'bounced',
      'complained',
      'opened',
      'clicked',
      'unsubscribed',
      'failed',
    ]) {
      expect(parseRow('email_events', { ...minimal.email_events, event_type }).ok).toBe(true);
    }
    for (const message_type of ['campaign', 'sequence', 'transactional']) {
      expect(parseRow('email_events', { ...minimal.email_events, message_type }).ok).toBe(true);
    }
    for (const event_type of ['sent', 'delivered', 'failed', 'clicked', 'opted_out', 'received']) {
      expect(parseRow('sms_events', { ...minimal.sms_events, event_type }).ok).toBe(true);
    }
  });

  it('withSnapshotDate prefixes the line without reparsing it', () => {
    const line = '{"id":"s1","schema_version":1}';
    expect(withSnapshotDate(line, '2026-09-30')).toBe(
      '{"snapshot_date":"2026-09-30","id":"s1","schema_version":1}',
    );
    expect(() => withSnapshotDate(line, '2026-9-30')).toThrow(RangeError);
  });
});
