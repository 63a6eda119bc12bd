/**
 * `message_events`: one row per outbound and inbound message (reference 004). Sluice keeps each message's
 * current row and exports it again when its `status` changes (`current_row`; the stateful ingest belongs to
 * the messages module).
 */
import { z } from 'zod';
import type { ColumnSpec } from './columns.js';
import { carrierErrorCode, phone } from './fields.js';
import { hex, pick, type Random, weighted } from './random.js';
import { iso, type SampleWorld } from './sample-world.js';
import { secondProductDataset } from './second-product.js';
import type { SampleRow } from './types.js';

/** `message_events.direction`. */
export const MESSAGE_DIRECTIONS = ['outbound', 'inbound'] as const;
/** `message_events.status`. */
export const MESSAGE_STATUSES = [
  'unsent',
  'queued',
  'sending',
  'sent',
  'delivered',
  'failed',
  'received',
  'on_hold',
] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];
/** `protocol` of messages and projects. */
export const MESSAGE_PROTOCOLS = ['sms', 'mms', 'rcs'] as const;
/** `message_events.send_type`. */
export const SEND_TYPES = ['scheduled', 'manual', 'auto-response', 'test', 'chat'] as const;

const SPECS = [
  ['message_id', 'string', false, 'Message id'],
  ['external_message_id', 'string', true, 'Carrier message id'],
  ['conversation_id', 'string', false, 'Conversation the message belongs to'],
  ['project_id', 'string', true, 'Project id'],
  ['project_name', 'string', true, 'Project name at export time'],
  ['project_type', 'string', true, 'Project type'],
  ['direction', 'string', false, '`outbound` or `inbound`', z.enum(MESSAGE_DIRECTIONS)],
  [
    'status',
    'string',
    false,
    'Delivery status at export time: `unsent`, `queued`, `sending`, `sent`, `delivered`, `failed`, ' +
      '`received` (inbound) or `on_hold`',
    z.enum(MESSAGE_STATUSES),
  ],
  ['channel', 'string', true, 'Channel'],
  ['protocol', 'string', true, '`sms`, `mms` or `rcs`', z.enum(MESSAGE_PROTOCOLS)],
  ['from_phone_number', 'string', false, 'Sender (E.164, or a short code)', phone({ shortCodes: true })],
  ['to_phone_number', 'string', false, 'Recipient (E.164, or a short code)', phone({ shortCodes: true })],
  ['message_text', 'string', true, 'Message body', z.string().max(20_000)],
  ['media_url_count', 'int32', false, 'Number of attached media URLs'],
  [
    'send_type',
    'string',
    true,
    '`scheduled` (project send), `manual`, `auto-response`, `test` or `chat`',
    z.enum(SEND_TYPES),
  ],
  [
    'error_code',
    'string',
    true,
    'Carrier error code in the display form used by the dashboard (the `40` prefix stripped: `300` for `40300`)',
    carrierErrorCode,
  ],
  ['error_reason', 'string', true, 'Human-readable label for `error_code`'],
  ['sent_at', 'timestamp_millis_utc', true, 'Accepted by the carrier'],
  ['delivered_at', 'timestamp_millis_utc', true, 'Delivery receipt time'],
  ['failed_at', 'timestamp_millis_utc', true, 'Failure time'],
  ['url_clicked_at', 'timestamp_millis_utc', true, 'First click on a tracked link in this message'],
  ['url_click_count', 'int32', true, 'Click count at export time'],
  ['contact_id', 'string', true, 'Contact id, for joins to your own contact data'],
  ['organization_id', 'string', false, 'Organization that owns the message'],
  ['created_at', 'timestamp_millis_utc', false, 'When the message row was created'],
  [
    'updated_at',
    'timestamp_millis_utc',
    true,
    'Last change to the row; use it to keep the latest version of a message',
  ],
] as const satisfies readonly ColumnSpec[];

/** The columns of a `message_events` row (normalized). */
export interface MessageEventColumns extends Record<string, unknown> {
  message_id: string;
  external_message_id: string | null;
  conversation_id: string;
  project_id: string | null;
  project_name: string | null;
  project_type: string | null;
  direction: (typeof MESSAGE_DIRECTIONS)[number];
  status: MessageStatus;
  channel: string | null;
  protocol: (typeof MESSAGE_PROTOCOLS)[number] | null;
  from_phone_number: string;
  to_phone_number: string;
  message_text: string | null;
  media_url_count: number;
  send_type: (typeof SEND_TYPES)[number] | null;
  error_code: string | null;
  error_reason: string | null;
  sent_at: string | null;
  delivered_at: string | null;
  failed_at: string | null;
  url_clicked_at: string | null;
  url_click_count: number | null;
  contact_id: string | null;
  organization_id: string;
  created_at: string;
  updated_at: string | null;
}

export const messageEvents = secondProductDataset<'message_events', MessageEventColumns>({
  name: 'message_events',
  semantics: 'current_row',
  summary:
    'One row per outbound and inbound message. A message is exported again in a later window whenever its ' +
    'delivery status changes after it was first exported (for example a delivery receipt that arrives the next ' +
    'day). Keep the row with the greatest `updated_at` per `message_id`. The columns "at export time" ' +
    '(`status`, `project_name`, `url_click_count`) hold what Sluice held when the status change of the row was ' +
    'recorded, so every row agrees with its own `updated_at`: a change of other fields only (a click, a renamed ' +
    'project) goes out with the message\'s next status change, and a window written again (a retry, a backfill) ' +
    'holds the same rows.',
  specs: SPECS,
  idField: 'message_id',
  erasure: { phone: ['from_phone_number', 'to_phone_number'], contactId: ['contact_id'] },
});
export type MessageEventRow = z.output<typeof messageEvents.schema>;

const INBOUND_TEXTS = [
  'STOP',
  'Yes, count me in!',
  'Where do I vote?',
  'stop please',
  'Thanks!',
  'NO',
] as const;
const OUTBOUND_TEXTS = [
  'Hi {name}, early voting opens tomorrow. Find your location: ',
  'Reminder: our town hall is tonight at 7pm. RSVP: ',
  'Can you help us reach our goal by midnight? ',
  'Thanks for volunteering! Pick a shift: ',
] as const;
const FAILURES = [
  ['40300', 'Carrier rejected: unreachable destination'],
  ['40008', 'Message filtered as spam'],
  ['30007', 'Carrier violation'],
  ['40002', 'Landline or unreachable carrier'],
] as const;

/**
 * Sample `message_events` rows of one message created at `timeMs`: an outbound project send recorded `queued`
 * or `sent`, and its delivery receipt (`delivered`, or `failed` with an error) as a later whole row, some the
 * next day (only receipts at or before `untilMs`); or an inbound reply, `received`.
 */
export function sampleMessageEvents(
  world: SampleWorld,
  random: Random,
  timeMs: number,
  untilMs: number,
): SampleRow[] {
  const contact = pick(random, world.contacts);
  const project = pick(random, world.projects);
  const sender = pick(random, world.senders);
  const base = {
    message_id: `msg_${hex(random, 16)}`,
    external_message_id: null as string | null,
    conversation_id: `cnv_${contact.contact_id.slice(4)}`,
    project_id: null as string | null,
    project_name: null as string | null,
    project_type: null as string | null,
    channel: project.channel,
    protocol: project.protocol,
    media_url_count: project.protocol === 'mms' ? 1 + Math.floor(random() * 2) : 0,
    error_code: null as string | null,
    error_reason: null as string | null,
    sent_at: null as string | null,
    delivered_at: null as string | null,
    failed_at: null as string | null,
    url_clicked_at: null as string | null,
    url_click_count: null as number | null,
    contact_id: contact.contact_id,
    created_at: iso(timeMs),
  };
  if (random() < 0.15) {
    return [
      {
        atMs: timeMs,
        row: {
          ...base,
          direction: 'inbound',
          status: 'received',
          from_phone_number: contact.phone_number,
          to_phone_number: sender,
          message_text: pick(random, INBOUND_TEXTS),
          send_type: 'chat',
          updated_at: iso(timeMs),
        },
      },
    ];
  }
  const sendType = weighted([
    ['scheduled', 80],
    ['manual', 10],
    ['auto-response', 6],
    ['test', 4],
  ] as const)(random);
  const scheduled = sendType === 'scheduled' || sendType === 'test';
  const sentMs = timeMs + 200 + Math.floor(random() * 4_000);
  const outbound = {
    ...base,
    external_message_id: `SM${hex(random, 32)}`,
    project_id: scheduled ? project.project_id : null,
    project_name: scheduled ? project.name : null,
    project_type: scheduled ? project.type : null,
    direction: 'outbound',
    from_phone_number: sender,
    to_phone_number: contact.phone_number,
    message_text: `${pick(random, OUTBOUND_TEXTS).replace('{name}', 'there')}https://pcms.to/${hex(random, 7)}`,
    send_type: sendType,
  };
  const first = random() < 0.3 ? 'queued' : 'sent';
  const rows: SampleRow[] = [
    {
      atMs: timeMs,
      row: {
        ...outbound,
        status: first,
        sent_at: first === 'sent' ? iso(sentMs) : null,
        updated_at: iso(timeMs),
      },
    },
  ];
  // The receipt: seconds later, or (one in ten) the next day.
  const receiptMs =
    sentMs +
    (random() < 0.1 ? 86_400_000 + Math.floor(random() * 3_600_000) : 1_000 + Math.floor(random() * 20_000));
  if (receiptMs > untilMs) return rows;
  const failed = random() < 0.07;
  const failure = failed ? pick(random, FAILURES) : undefined;
  const clicks = !failed && random() < 0.12 ? 1 + Math.floor(random() * 3) : null;
  rows.push({
    atMs: receiptMs,
    row: {
      ...outbound,
      status: failed ? 'failed' : 'delivered',
      sent_at: iso(sentMs),
      delivered_at: failed ? null : iso(receiptMs),
      failed_at: failed ? iso(receiptMs) : null,
      error_code: failure ? failure[0] : null,
      error_reason: failure ? failure[1] : null,
      url_clicked_at: clicks === null ? null : iso(receiptMs),
      url_click_count: clicks,
      updated_at: iso(receiptMs),
    },
  });
  return rows;
}
