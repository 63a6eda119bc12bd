import { describe, expect, it } from 'vitest';
import { DATASETS, EVENT_DATASETS, SECOND_PRODUCT_DATASETS } from '../datasets.js';
import { PARQUET_COLUMNS } from '../parquet-schema.js';
import { parseRow, serializeRow } from '../rows.js';
import { CATALOG, fileLineOf, normalizePhone } from './index.js';

/** The reference's tables (004): `name:type`, `?` when nullable. */
const REFERENCE: Record<(typeof SECOND_PRODUCT_DATASETS)[number], string> = {
  message_events:
    'message_id:string external_message_id:string? conversation_id:string project_id:string? ' +
    'project_name:string? project_type:string? direction:string status:string channel:string? ' +
    'protocol:string? from_phone_number:string to_phone_number:string message_text:string? ' +
    'media_url_count:int32 send_type:string? error_code:string? error_reason:string? sent_at:timestamp? ' +
    'delivered_at:timestamp? failed_at:timestamp? url_clicked_at:timestamp? url_click_count:int32? ' +
    'contact_id:string? organization_id:string created_at:timestamp updated_at:timestamp?',
  project_summary:
    'project_id:string campaign_id:string? name:string type:string? protocol:string? channel:string? ' +
    'status:string? total_recipients:int32? messages_sent:int32? messages_delivered:int32? ' +
    'messages_failed:int32? scheduled_at:timestamp? sent_at:timestamp? completed_at:timestamp? ' +
    'organization_id:string brand_id:string? created_at:timestamp?',
  opt_out_events:
    'opt_out_id:string phone_number:string source:string? opt_out_message:string? brand_id:string? ' +
    'organization_id:string opted_out_at:timestamp? created_at:timestamp',
  click_events:
    'click_id:string tracking_link_id:string message_id:string project_id:string contact_id:string? ' +
    'phone_number:string? short_url:string destination_url:string clicked_at:timestamp ip_address:string? ' +
    'user_agent:string? device:string? browser:string? os:string? country_code:string? region:string? ' +
    'city:string? referrer:string? utm_source:string? utm_medium:string? utm_campaign:string? ' +
    'is_unique_click:boolean is_share_click:boolean is_bot_click:boolean? organization_id:string brand_id:string?',
};

const click = {
  click_id: 'clk_1',
  tracking_link_id: 'lnk_1',
  message_id: 'msg_1',
  project_id: 'prj_1',
  phone_number: '(555) 555-0123',
  short_url: 'https://pcms.to/a',
  destination_url: 'https://example.org/',
  clicked_at: '2026-12-04T10:00:00+01:00',
  is_unique_click: true,
  is_share_click: false,
  organization_id: 'ws_1',
  recorded_at: '2026-12-04T09:00:01Z',
};

describe('the dataset catalogue', () => {
  it('holds every dataset, in the order of DATASETS, events and snapshots as the lists say', () => {
    expect(Object.keys(CATALOG)).toEqual([...DATASETS]);
    for (const dataset of DATASETS) {
      expect(CATALOG[dataset].name).toBe(dataset);
      expect(CATALOG[dataset].kind === 'events').toBe(
        (EVENT_DATASETS as readonly string[]).includes(dataset),
      );
      expect(CATALOG[dataset].product === 'second').toBe(
        (SECOND_PRODUCT_DATASETS as readonly string[]).includes(dataset),
      );
      for (const column of CATALOG[dataset].columns)
        expect(column.doc, `${dataset}.${column.name}`).not.toBe('');
    }
    expect(CATALOG.message_events.semantics).toBe('current_row');
    expect(CATALOG.project_summary.semantics).toBe('once');
    expect(CATALOG.opt_out_events.semantics).toBe('append');
    expect(CATALOG.click_events.semantics).toBe('append');
  });

  it("gives the second product's datasets exactly the reference's columns, types and nullability", () => {
    const typeOf = {
      string: 'string',
      int32: 'int32',
      boolean: 'boolean',
      timestamp_millis_utc: 'timestamp',
    };
    for (const dataset of SECOND_PRODUCT_DATASETS) {
      const actual = PARQUET_COLUMNS[dataset]
        .map((c) => `${c.name}:${typeOf[c.type as keyof typeof typeOf]}${c.required ? '' : '?'}`)
        .join(' ');
      expect(actual, dataset).toBe(REFERENCE[dataset]);
    }
    expect(SECOND_PRODUCT_DATASETS.map((d) => PARQUET_COLUMNS[d].length)).toEqual([26, 17, 8, 26]);
  });

  it('normalizes phone numbers to E.164, keeps short codes where senders may be one, refuses the rest', () => {
    expect(normalizePhone('+15555550123', false)).toBe('+15555550123');
    expect(normalizePhone('5555550123', false)).toBe('+15555550123');
    expect(normalizePhone('1 (555) 555-0123', false)).toBe('+15555550123');
    expect(normalizePhone('+44 20 7946 0958', false)).toBe('+442079460958');
    expect(normalizePhone('471016', true)).toBe('471016');
    expect(normalizePhone('471016', false)).toBeUndefined();
    expect(normalizePhone('12', true)).toBeUndefined();
    expect(normalizePhone('call me', true)).toBeUndefined();
    expect(normalizePhone('+0123', false)).toBeUndefined();
  });

  it('parses a click: id and recorded time kept beside the columns, phone and times normalized', () => {
    const parsed = parseRow('click_events', click);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.row).toMatchObject({
      id: 'clk_1',
      recorded_at: '2026-12-04T09:00:01.000Z',
      phone_number: '+15555550123',
      clicked_at: '2026-12-04T09:00:00.000Z',
      contact_id: null,
      is_bot_click: null,
    });
    const line = serializeRow('click_events', parsed.row);
    expect(Object.keys(JSON.parse(line))).toEqual([
      'id',
      'recorded_at',
      ...REFERENCE.click_events.split(' ').map((c) => c.split(':')[0]),
    ]);
    // The file line: exactly the columns, in order; no id, recorded_at or schema_version.
    const fileLine = fileLineOf('click_events')!(line);
    expect(Object.keys(JSON.parse(fileLine))).toEqual(PARQUET_COLUMNS.click_events.map((c) => c.name));
    expect(fileLine).not.toContain('schema_version');
    expect(fileLineOf('email_events')).toBeUndefined();
  });

  it('refuses a row that cannot be normalized, naming the field and the rule, never the value', () => {
    const parsed = parseRow('click_events', { ...click, phone_number: '555-CALL-NOW', is_share_click: 'no' });
    expect(parsed).toEqual({
      ok: false,
      reason: expect.stringMatching(/^phone_number: must be a phone number in E\.164/),
    });
    expect(parsed.ok ? '' : parsed.reason).toMatch(/is_share_click: /);
    expect(parsed.ok ? '' : parsed.reason).not.toContain('CALL');
    const big = parseRow('message_events', { media_url_count: 2 ** 31 });
    expect(big.ok ? '' : big.reason).toMatch(/media_url_count: /);
  });

  it('strips the 40 of a 5-digit carrier error code beginning with 40 and keeps error_reason', () => {
    const message = {
      message_id: 'msg_1',
      conversation_id: 'cnv_1',
      direction: 'outbound',
      status: 'failed',
      from_phone_number: '471016',
      to_phone_number: '5555550123',
      media_url_count: 0,
      error_code: '40300',
      error_reason: 'Carrier rejected',
      organization_id: 'ws_1',
      created_at: 0,
      recorded_at: 1,
    };
    const row = (code: unknown) => {
      const parsed = parseRow('message_events', { ...message, error_code: code });
      if (!parsed.ok) throw new Error(parsed.reason);
      return parsed.row;
    };
    expect(row('40300')).toMatchObject({
      error_code: '300',
      error_reason: 'Carrier rejected',
      from_phone_number: '471016',
      to_phone_number: '+15555550123',
    });
    expect(row(40008).error_code).toBe('008');
    expect(row('30007').error_code).toBe('30007');
    expect(row('400').error_code).toBe('400');
    expect(row('403001').error_code).toBe('403001');
    expect(row(null).error_code).toBeNull();
  });
});
