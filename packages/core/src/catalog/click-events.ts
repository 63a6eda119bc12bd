/** `click_events`: one row per click on a tracked link (reference 004). */
import type { z } from 'zod';
import type { ColumnSpec } from './columns.js';
import { phone } from './fields.js';
import { hex, pick, type Random, weighted } from './random.js';
import type { SampleWorld } from './sample-world.js';
import { secondProductDataset } from './second-product.js';
import type { SampleRow } from './types.js';

const SPECS = [
  ['click_id', 'string', false, 'Click id'],
  ['tracking_link_id', 'string', false, 'Tracked link id'],
  ['message_id', 'string', false, 'Message that carried the link'],
  ['project_id', 'string', false, 'Project'],
  ['contact_id', 'string', true, 'Contact'],
  ['phone_number', 'string', true, 'Recipient number (E.164)', phone({ shortCodes: false })],
  ['short_url', 'string', false, 'The tracked URL as sent'],
  ['destination_url', 'string', false, 'Where it resolved'],
  ['clicked_at', 'timestamp_millis_utc', false, 'Click time'],
  ['ip_address', 'string', true, 'Client IP'],
  ['user_agent', 'string', true, 'Browser user agent'],
  ['device', 'string', true, 'Device class'],
  ['browser', 'string', true, 'Browser'],
  ['os', 'string', true, 'Operating system'],
  ['country_code', 'string', true, 'Country'],
  ['region', 'string', true, 'Region or state'],
  ['city', 'string', true, 'City'],
  ['referrer', 'string', true, 'HTTP referrer'],
  ['utm_source', 'string', true, 'UTM source on the destination URL'],
  ['utm_medium', 'string', true, 'UTM medium'],
  ['utm_campaign', 'string', true, 'UTM campaign'],
  ['is_unique_click', 'boolean', false, 'First click from this recipient on this link'],
  ['is_share_click', 'boolean', false, 'Click on a forwarded link'],
  ['is_bot_click', 'boolean', true, 'Classified as a bot or link scanner'],
  ['organization_id', 'string', false, 'Owning organization'],
  ['brand_id', 'string', true, 'Brand'],
] as const satisfies readonly ColumnSpec[];

/** The columns of a `click_events` row, as a producer sends them (normalized). */
export interface ClickEventColumns extends Record<string, unknown> {
  click_id: string;
  tracking_link_id: string;
  message_id: string;
  project_id: string;
  contact_id: string | null;
  phone_number: string | null;
  short_url: string;
  destination_url: string;
  clicked_at: string;
  ip_address: string | null;
  user_agent: string | null;
  device: string | null;
  browser: string | null;
  os: string | null;
  country_code: string | null;
  region: string | null;
  city: string | null;
  referrer: string | null;
  utm_source: string | null;
  utm_medium: string | null;
  utm_campaign: string | null;
  is_unique_click: boolean;
  is_share_click: boolean;
  is_bot_click: boolean | null;
  organization_id: string;
  brand_id: string | null;
}

export const clickEvents = secondProductDataset<'click_events', ClickEventColumns>({
  name: 'click_events',
  semantics: 'append',
  summary: 'One row per click on a tracked link, in the window of the time Sluice recorded the click.',
  specs: SPECS,
  idField: 'click_id',
  erasure: { phone: ['phone_number'], contactId: ['contact_id'] },
});
export type ClickEventRow = z.output<typeof clickEvents.schema>;

const CLICK_AGENTS = [
  [
    'Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1',
    'mobile',
    'Safari',
    'iOS',
  ],
  [
    'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/129.0.0.0 Mobile Safari/537.36',
    'mobile',
    'Chrome',
    'Android',
  ],
  [
    'Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/25.0 Chrome/121.0.0.0 Mobile Safari/537.36',
    'mobile',
    'Samsung Internet',
    'Android',
  ],
  [
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/129.0.0.0 Safari/537.36',
    'desktop',
    'Chrome',
    'Windows',
  ],
  [
    'Mozilla/5.0 (iPad; CPU OS 17_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.6 Mobile/15E148 Safari/604.1',
    'tablet',
    'Safari',
    'iPadOS',
  ],
] as const;
const BOT_AGENTS = [
  'facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)',
  'Mozilla/5.0 (compatible; Barracuda Sentinel; +https://www.barracuda.com)',
] as const;
const PLACES = [
  ['US', 'PA', 'Philadelphia'],
  ['US', 'GA', 'Atlanta'],
  ['US', 'AZ', 'Phoenix'],
  ['US', 'WI', 'Milwaukee'],
  ['US', 'MI', 'Detroit'],
  ['US', 'NV', 'Las Vegas'],
  ['CA', 'ON', 'Toronto'],
] as const;

/** The value of a query parameter of a URL, or null. */
function queryParam(url: string, name: string): string | null {
  return new URL(url).searchParams.get(name);
}

/**
 * A sample `click_events` row at `timeMs`: a recipient's click on a tracked link (unique or repeated), a
 * forwarded link's click (shared, no contact), or a link scanner's (bot).
 */
export function sampleClickEvent(world: SampleWorld, random: Random, timeMs: number): SampleRow {
  const link = pick(random, world.links);
  const contact = pick(random, world.contacts);
  const project = pick(random, world.projects);
  const kind = weighted([
    ['unique', 70],
    ['repeat', 15],
    ['share', 8],
    ['bot', 7],
  ] as const)(random);
  const agent = pick(random, CLICK_AGENTS);
  const place = pick(random, PLACES);
  const bot = kind === 'bot';
  const share = kind === 'share';
  return {
    atMs: timeMs,
    row: {
      click_id: `clk_${hex(random, 16)}`,
      tracking_link_id: link.tracking_link_id,
      message_id: `msg_${hex(random, 16)}`,
      project_id: project.project_id,
      contact_id: share ? null : contact.contact_id,
      phone_number: share ? null : contact.phone_number,
      short_url: link.short_url,
      destination_url: link.destination_url,
      clicked_at: new Date(timeMs).toISOString(),
      ip_address: `${1 + Math.floor(random() * 223)}.${Math.floor(random() * 256)}.${Math.floor(random() * 256)}.${Math.floor(random() * 256)}`,
      user_agent: bot ? pick(random, BOT_AGENTS) : agent[0],
      device: bot ? 'bot' : agent[1],
      browser: bot ? null : agent[2],
      os: bot ? null : agent[3],
      country_code: place[0],
      region: place[1],
      city: place[2],
      referrer: share ? pick(random, ['https://www.facebook.com/', 'https://t.co/', null]) : null,
      utm_source: queryParam(link.destination_url, 'utm_source'),
      utm_medium: queryParam(link.destination_url, 'utm_medium'),
      utm_campaign: queryParam(link.destination_url, 'utm_campaign'),
      is_unique_click: kind === 'unique',
      is_share_click: share,
      is_bot_click: bot ? true : random() < 0.9 ? false : null,
      brand_id: project.brand_id,
    },
  };
}
