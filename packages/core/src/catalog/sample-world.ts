/**
 * The shared world of the second product's sample rows: projects, contacts, senders and tracked links of one
 * workspace, drawn from a seed, so messages, clicks, opt-outs and projects refer to one another. Pure.
 */
import { hex, mulberry32, pick, type Random } from './random.js';

export interface SampleProject {
  project_id: string;
  campaign_id: string | null;
  name: string;
  type: string;
  protocol: 'sms' | 'mms' | 'rcs';
  channel: string;
  brand_id: string;
  total_recipients: number;
}

export interface SampleContact {
  contact_id: string;
  phone_number: string;
}

/** What the sample generators of one workspace share. */
export interface SampleWorld {
  projects: readonly SampleProject[];
  contacts: readonly SampleContact[];
  /** Short codes and long numbers projects send from. */
  senders: readonly string[];
  links: readonly { tracking_link_id: string; short_url: string; destination_url: string }[];
}

const PROJECT_NAMES = [
  'GOTV reminder',
  'Town hall invite',
  'Volunteer shift signup',
  'Fundraising deadline',
  'Early voting locations',
  'Petition follow-up',
  'Survey: top issues',
  'Canvass recap',
] as const;
const DESTINATIONS = [
  'https://www.example-campaign.org/vote?utm_source=sms&utm_medium=text&utm_campaign=gotv',
  'https://www.example-campaign.org/donate?utm_source=sms&utm_medium=text&utm_campaign=deadline',
  'https://events.example-campaign.org/town-hall',
  'https://www.example-campaign.org/volunteer?utm_source=sms&utm_medium=p2p',
] as const;

/** A North American number in the 555 range, E.164. */
export function samplePhone(random: Random): string {
  return `+1${200 + Math.floor(random() * 800)}555${String(Math.floor(random() * 10_000)).padStart(4, '0')}`;
}

/** The world of `seed`: the same seed, the same projects, contacts, senders and links. */
export function sampleWorld(seed: number): SampleWorld {
  const random = mulberry32(Math.imul(seed ^ 0x2c1b3c6d, 0x297a2d39));
  const projects = Array.from({ length: 24 }, (_, index) => ({
    project_id: `prj_${hex(random, 12)}`,
    campaign_id: random() < 0.8 ? `cmp_${hex(random, 10)}` : null,
    name: `${pick(random, PROJECT_NAMES)} #${index + 1}`,
    type: pick(random, ['broadcast', 'peer_to_peer', 'survey']),
    protocol: pick(random, ['sms', 'sms', 'sms', 'mms', 'rcs'] as const),
    channel: pick(random, ['text', 'text', 'whatsapp']),
    brand_id: `brd_${pick(random, ['a1', 'b2', 'c3'])}`,
    total_recipients: 500 + Math.floor(random() * 50_000),
  }));
  const contacts = Array.from({ length: 5_000 }, () => ({
    contact_id: `con_${hex(random, 12)}`,
    phone_number: samplePhone(random),
  }));
  const senders = ['471016', '88022', samplePhone(random), samplePhone(random)];
  const links = Array.from({ length: 40 }, () => ({
    tracking_link_id: `lnk_${hex(random, 10)}`,
    short_url: `https://pcms.to/${hex(random, 7)}`,
    destination_url: pick(random, DESTINATIONS),
  }));
  return { projects, contacts, senders, links };
}

export const iso = (ms: number): string => new Date(ms).toISOString();
