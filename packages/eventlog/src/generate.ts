/**
 * A deterministic generator of realistic rows, for the demo (`npm run sluice -- seed`), the tests and the
 * benchmark. The same options always give the same rows.
 *
 * Email events average about 600 bytes serialized, with the mix of a real sending program: mostly sends,
 * deliveries and opens, some clicks, a few bounces, delays, unsubscribes, complaints and transport failures.
 * Events reference a pool of subscribers that {@link generateSubscribers} produces with the same seed.
 *
 * Rows come out complete and normalized (every field, `null` when absent, ISO UTC times), so
 * `serializeRow(dataset, event)` serializes them as ingest would.
 */
import {
  type CustomEventRow,
  type EmailEventRow,
  type EmailEventType,
  type EventDataset,
  type MessageType,
  type RowByDataset,
  type SmsEventRow,
  type SmsEventType,
  type SubscriberRow,
  hex,
  mulberry32,
  pick,
  type Random,
  type SampleRow,
  type SecondProductDataset,
  sampleClickEvent,
  sampleMessageEvents,
  sampleOptOutEvent,
  sampleProjectSummary,
  sampleWorld,
  serializeRow,
  weighted,
} from '@sluice/core';
import { fnv1a } from './keys.js';

export { mulberry32 };

const FIRST_NAMES = [
  'ada',
  'grace',
  'alan',
  'linus',
  'margaret',
  'ken',
  'barbara',
  'dennis',
  'frances',
  'edsger',
  'katherine',
  'donald',
  'radia',
  'tim',
  'hedy',
  'john',
  'sophie',
  'yukihiro',
  'anita',
  'guido',
  'lucia',
  'mateo',
  'amara',
  'noah',
  'chen',
  'priya',
  'omar',
  'ingrid',
  'kofi',
  'elena',
] as const;
const LAST_NAMES = [
  'lovelace',
  'hopper',
  'turing',
  'torvalds',
  'hamilton',
  'thompson',
  'liskov',
  'ritchie',
  'allen',
  'dijkstra',
  'johnson',
  'knuth',
  'perlman',
  'lee',
  'lamarr',
  'mccarthy',
  'wilson',
  'matsumoto',
  'borg',
  'rossum',
  'garcia',
  'silva',
  'okafor',
  'nguyen',
  'wang',
  'patel',
  'haddad',
  'larsen',
  'mensah',
  'petrova',
] as const;
/** Recipient domains with their mailbox provider, weighted like a consumer list. */
const DOMAINS = weighted([
  [['gmail.com', 'gmail'], 40],
  [['outlook.com', 'outlook'], 10],
  [['hotmail.com', 'outlook'], 7],
  [['yahoo.com', 'yahoo'], 9],
  [['icloud.com', 'icloud'], 8],
  [['proton.me', 'proton'], 2],
  [['gmx.de', 'gmx'], 2],
  [['acme-corp.com', 'google_workspace'], 8],
  [['globex.io', 'microsoft_365'], 8],
  [['initech.example', 'other'], 6],
] as const);
const SUBJECTS = [
  'Your weekly product digest',
  'Welcome aboard: three things to try first',
  'Your invoice for September is ready',
  'We saved your cart for you',
  'New in the shop: autumn collection',
  'Reset your password',
  'Your order has shipped',
  'Last chance: 20% off ends tonight',
  'How was your experience with us?',
  'Your trial ends in 3 days',
  'Security alert: new sign-in from Chrome on Windows',
  'Monthly account summary',
] as const;
const USER_AGENTS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/129.0.0.0 Safari/537.36',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Safari/605.1.15',
  'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/129.0.0.0 Mobile Safari/537.36',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:131.0) Gecko/20100101 Firefox/131.0',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/129.0.0.0 Safari/537.36 Edg/129.0.0.0',
  'Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)',
  'Microsoft Office/16.0 (Windows NT 10.0; Microsoft Outlook 16.0.17928; Pro)',
] as const;
const COUNTRIES = weighted([
  ['US', 35],
  ['GB', 10],
  ['DE', 10],
  ['FR', 7],
  ['BR', 6],
  ['IN', 8],
  ['CA', 5],
  ['AU', 4],
  ['NL', 4],
  ['JP', 4],
  ['ES', 4],
  ['NG', 3],
] as const);
const URL_PATHS = [
  '/pricing',
  '/blog/how-we-cut-our-cloud-bill-in-half',
  '/shop/autumn-collection?sort=new',
  '/account/billing/invoices/2026-09',
  '/cart/recover',
  '/docs/getting-started/quickstart',
  '/events/webinar-data-warehouses-for-marketers',
  '/products/trail-runner-2?color=slate&size=42',
] as const;
const BOUNCES = weighted([
  [['Permanent', 'General'], 45],
  [['Permanent', 'NoEmail'], 25],
  [['Permanent', 'Suppressed'], 5],
  [['Transient', 'MailboxFull'], 12],
  [['Transient', 'General'], 10],
  [['Transient', 'ContentRejected'], 3],
] as const);
const EMAIL_TYPES = weighted<EmailEventType>([
  ['sent', 300],
  ['delivered', 285],
  ['opened', 230],
  ['clicked', 90],
  ['delivery_delayed', 20],
  ['bounced', 30],
  ['unsubscribed', 12],
  ['complained', 3],
  ['failed', 7],
]);
const MESSAGE_TYPE = weighted<MessageType>([
  ['campaign', 60],
  ['sequence', 28],
  ['transactional', 12],
]);
const SMS_TYPES = weighted<SmsEventType>([
  ['sent', 40],
  ['delivered', 38],
  ['failed', 4],
  ['clicked', 10],
  ['opted_out', 2],
  ['received', 6],
]);
const CUSTOM_EVENTS = [
  'order.placed',
  'cart.abandoned',
  'page.viewed',
  'trial.started',
  'subscription.renewed',
  'feature.used',
] as const;

function withUtm(url: string, campaign: string): string {
  return `${url}${url.includes('?') ? '&' : '?'}utm_source=sluice&utm_medium=email&utm_campaign=${campaign}`;
}

/** Options of {@link generateEvents}. */
export interface GenerateEventsOptions {
  /** How many events. */
  count: number;
  /** The PRNG seed. @default 1 */
  seed?: number;
  /** Mixed into the seed, so two workspaces get different ids. */
  workspaceId?: string;
  /** Start of the time range, epoch ms (exclusive). */
  from: number;
  /** End of the time range, epoch ms (inclusive). */
  to: number;
  /**
   * With `true`, `recorded_at` is set, spread evenly over `(from, to]` and non-decreasing, and `occurred_at` is a
   * little earlier (usually under 3 s, a delayed bounce up to hours). With `false`, `recorded_at` is left out
   * (ingest records the events now) and `occurred_at` is spread over `(from, to]`.
   * @default true
   */
  recordedAt?: boolean;
  /** Relative weights of the datasets. @default { email_events: 80, sms_events: 8, custom_events: 12 } */
  mix?: Partial<Record<EventDataset, number>>;
  /** Size of the subscriber pool events refer to. @default 10000 */
  subscribers?: number;
}

/** A row whose `recorded_at` is absent when the generator leaves recording to ingest. */
type Generated<R> = Omit<R, 'recorded_at'> & { recorded_at?: string };

/**
 * A generated event: an ingest input with every row field present (`recorded_at` only with
 * `recordedAt: true`).
 */
export type GeneratedEvent =
  | ({ dataset: 'email_events' } & Generated<EmailEventRow>)
  | ({ dataset: 'sms_events' } & Generated<SmsEventRow>)
  | ({ dataset: 'custom_events' } & Generated<CustomEventRow>);

/** The line ingest would store for a generated event (`recorded_at` null when absent). */
export function generatedLine(event: GeneratedEvent): string {
  return serializeRow(event.dataset, event as unknown as RowByDataset[typeof event.dataset]);
}

function seedOf(seed: number, workspaceId: string | undefined): number {
  return (seed ^ (workspaceId ? fnv1a(workspaceId) : 0)) >>> 0;
}

/** The deterministic identity of subscriber `index` of a pool. */
const ID_BITS = 48n;
const ID_MASK = (1n << ID_BITS) - 1n;

/**
 * The 12 hex digits of subscriber `index`'s id: a bijection of the index onto 48 bits for each seed (an
 * odd multiplier, xor-shifts and an added seed are each invertible modulo 2^48), so the ids of one seed never
 * collide, however many subscribers, and still look random. (Ids drawn from the index's random stream did
 * collide: a few in 50,000.)
 */
function subscriberIdHex(baseSeed: number, index: number): string {
  let x = (BigInt(index) + (BigInt(baseSeed >>> 0) << 16n)) & ID_MASK;
  x = (x * 0x5deece66dn) & ID_MASK;
  x ^= x >> 23n;
  x = (x * 0xbf58476d1ce5n) & ID_MASK;
  x ^= x >> 21n;
  return x.toString(16).padStart(12, '0');
}

function subscriberIdentity(baseSeed: number, index: number) {
  const random = mulberry32(Math.imul(baseSeed ^ 0x5bd1e995, 0x27d4eb2d) + index);
  const first = pick(random, FIRST_NAMES);
  const last = pick(random, LAST_NAMES);
  const [domain, provider] = DOMAINS(random);
  return {
    id: `sub_${subscriberIdHex(baseSeed, index)}`,
    first,
    last,
    email: `${first}.${last}${index}@${domain}`,
    domain,
    provider,
    random,
  };
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Generates events lazily (a 1,000,000-event run holds one at a time). Deterministic for the same options.
 */
export function* generateEvents(options: GenerateEventsOptions): Generator<GeneratedEvent, void, undefined> {
  const { count, from, to } = options;
  if (!(to > from)) throw new RangeError('generateEvents: `to` must be after `from`');
  const baseSeed = seedOf(options.seed ?? 1, options.workspaceId);
  const random = mulberry32(baseSeed);
  const pool = Math.max(1, options.subscribers ?? 10_000);
  const withRecordedAt = options.recordedAt ?? true;
  const mix = options.mix ?? { email_events: 80, sms_events: 8, custom_events: 12 };
  const dataset = weighted<EventDataset>(
    (['email_events', 'sms_events', 'custom_events'] as const).map((d) => [d, mix[d] ?? 0] as const),
  );
  const campaigns = Array.from({ length: 40 }, () => `cmp_${hex(random, 10)}`);
  const steps = Array.from({ length: 60 }, () => `stp_${hex(random, 10)}`);
  const templates = Array.from({ length: 16 }, () => `tpl_${hex(random, 8)}`);
  const abTests = Array.from({ length: 8 }, () => `ab_${hex(random, 12)}`);
  const span = to - from;
  const identities = new Map<number, ReturnType<typeof subscriberIdentity>>();
  const identity = (index: number) => {
    let found = identities.get(index);
    if (!found) {
      found = subscriberIdentity(baseSeed, index);
      identities.set(index, found);
    }
    return found;
  };

  for (let i = 0; i < count; i++) {
    const timeMs = from + Math.max(1, Math.ceil(((i + 1) * span) / count));
    const subscriber = identity(Math.floor(random() * pool));
    const id = `evt_${hex(random, 16)}`;
    const kind = dataset(random);
    const delayMs = random() < 0.97 ? Math.floor(random() * 3_000) : Math.floor(random() * 6 * 3_600_000);
    const occurredMs = withRecordedAt ? Math.max(0, timeMs - delayMs) : timeMs;
    const recorded = withRecordedAt ? { recorded_at: iso(timeMs) } : {};
    const occurred_at = iso(occurredMs);
    const campaignOrStep = random() < 0.6;
    const campaign_id = campaignOrStep ? pick(random, campaigns) : null;
    const sequence_step_id = campaignOrStep ? null : pick(random, steps);

    if (kind === 'email_events') {
      const event_type = EMAIL_TYPES(random);
      const message_type = MESSAGE_TYPE(random);
      const engaged = event_type === 'opened' || event_type === 'clicked';
      const bounce = event_type === 'bounced' ? BOUNCES(random) : undefined;
      const ab = message_type === 'campaign' && random() < 0.25;
      const row: GeneratedEvent = {
        dataset: 'email_events',
        id,
        event_type,
        occurred_at,
        ...recorded,
        subscriber_id: subscriber.id,
        email: subscriber.email,
        email_send_id: `snd_${hex(random, 16)}`,
        message_type,
        campaign_id: message_type === 'campaign' ? pick(random, campaigns) : null,
        sequence_step_id: message_type === 'sequence' ? pick(random, steps) : null,
        transactional_email_id: message_type === 'transactional' ? pick(random, templates) : null,
        email_name: pick(random, SUBJECTS),
        ab_test_id: ab ? pick(random, abTests) : null,
        ab_test_variant_id: ab ? `var_${pick(random, ['a', 'b', 'c'])}_${hex(random, 8)}` : null,
        bounce_type: bounce ? bounce[0] : null,
        bounce_sub_type: bounce ? bounce[1] : null,
        complaint_type: event_type === 'complained' ? pick(random, ['abuse', 'not-spam', 'other']) : null,
        clicked_url:
          event_type === 'clicked'
            ? withUtm(`https://www.example-shop.com${pick(random, URL_PATHS)}`, hex(random, 8))
            : null,
        ip_address: engaged
          ? `${1 + Math.floor(random() * 223)}.${Math.floor(random() * 256)}.${Math.floor(random() * 256)}.${Math.floor(random() * 256)}`
          : null,
        user_agent: engaged ? pick(random, USER_AGENTS) : null,
        country_code: engaged ? COUNTRIES(random) : null,
        recipient_domain: subscriber.domain,
        mailbox_provider: subscriber.provider,
      };
      yield row;
    } else if (kind === 'sms_events') {
      const event_type = SMS_TYPES(random);
      const segments = 1 + Math.floor(random() * random() * 4);
      yield {
        dataset: 'sms_events',
        id,
        event_type,
        occurred_at,
        ...recorded,
        subscriber_id: subscriber.id,
        sms_send_id: event_type === 'received' ? null : `sms_${hex(random, 16)}`,
        campaign_id,
        sequence_step_id,
        segments: event_type === 'sent' ? segments : null,
        credits: event_type === 'sent' ? segments * 0.75 : null,
        error_code: event_type === 'failed' ? pick(random, ['30003', '30005', '30006', '30007']) : null,
        clicked_url: event_type === 'clicked' ? `https://exs.to/${hex(random, 8)}` : null,
      };
    } else {
      const event_name = pick(random, CUSTOM_EVENTS);
      yield {
        dataset: 'custom_events',
        id,
        event_name,
        occurred_at,
        ...recorded,
        subscriber_id: random() < 0.9 ? subscriber.id : null,
        properties: customProperties(event_name, random),
        campaign_id: random() < 0.2 ? campaign_id : null,
        sequence_step_id: random() < 0.2 ? sequence_step_id : null,
      };
    }
  }
}

function customProperties(eventName: string, random: Random): Record<string, unknown> {
  switch (eventName) {
    case 'order.placed':
      return {
        order_id: `ord_${hex(random, 10)}`,
        total: Math.round(random() * 40_000) / 100,
        currency: pick(random, ['USD', 'EUR', 'GBP']),
        items: 1 + Math.floor(random() * 5),
      };
    case 'cart.abandoned':
      return { cart_id: `cart_${hex(random, 10)}`, value: Math.round(random() * 20_000) / 100 };
    case 'page.viewed':
      return {
        path: pick(random, URL_PATHS),
        referrer: pick(random, ['google', 'newsletter', 'direct', null]),
      };
    case 'trial.started':
      return { plan: pick(random, ['starter', 'pro', 'team']), days: 14 };
    case 'subscription.renewed':
      return { plan: pick(random, ['starter', 'pro', 'team']), interval: pick(random, ['month', 'year']) };
    default:
      return {
        feature: pick(random, ['export', 'segments', 'ab_test', 'api']),
        count: 1 + Math.floor(random() * 9),
      };
  }
}

/** Options of {@link generateSubscribers}. */
export interface GenerateSubscribersOptions {
  /** How many subscribers: the first `count` of the pool events refer to. */
  count: number;
  /** @default 1 */
  seed?: number;
  workspaceId?: string;
  /** `updated_at` is before this, `created_at` up to two years before. @default 2026-10-01T00:00:00Z */
  now?: number;
}

/** Generates subscribers lazily, deterministic for the same options; ids match {@link generateEvents}'s pool. */
export function* generateSubscribers(
  options: GenerateSubscribersOptions,
): Generator<SubscriberRow, void, undefined> {
  const baseSeed = seedOf(options.seed ?? 1, options.workspaceId);
  const now = options.now ?? Date.parse('2026-10-01T00:00:00.000Z');
  const status = weighted([
    ['active', 86],
    ['unsubscribed', 9],
    ['bounced', 3],
    ['complained', 1],
    ['pending', 1],
  ] as const);
  for (let index = 0; index < options.count; index++) {
    const identity = subscriberIdentity(baseSeed, index);
    const { random } = identity;
    const createdMs = now - Math.floor(random() * 730 * 86_400_000);
    const updatedMs = createdMs + Math.floor(random() * (now - createdMs));
    const hasPhone = random() < 0.35;
    yield {
      id: identity.id,
      email: identity.email,
      external_id: random() < 0.7 ? `usr_${hex(random, 12)}` : null,
      first_name: identity.first[0]!.toUpperCase() + identity.first.slice(1),
      last_name: identity.last[0]!.toUpperCase() + identity.last.slice(1),
      phone: hasPhone
        ? `+1${200 + Math.floor(random() * 800)}555${String(Math.floor(random() * 10_000)).padStart(4, '0')}`
        : null,
      status: status(random),
      sms_status: hasPhone ? pick(random, ['subscribed', 'subscribed', 'unsubscribed']) : null,
      tags: ['customer', 'newsletter', 'vip', 'beta', 'churn-risk'].filter(() => random() < 0.3),
      custom_attributes: {
        plan: pick(random, ['free', 'starter', 'pro', 'team']),
        signup_source: pick(random, ['web', 'ios', 'android', 'import']),
        lifetime_value: Math.round(random() * 100_000) / 100,
      },
      created_at: iso(createdMs),
      updated_at: iso(updatedMs),
    };
  }
}

/** Options of {@link generateDatasetRows}. */
export interface GenerateDatasetRowsOptions {
  /** A second-product dataset. */
  dataset: SecondProductDataset;
  /** How many source records (messages, clicks, opt-outs, project completions) start in the range. */
  count: number;
  /** @default 1 */
  seed?: number;
  workspaceId?: string;
  /** Start of the time range, epoch ms (exclusive). */
  from: number;
  /** End of the time range, epoch ms (inclusive). */
  to: number;
  /** With `true`, each row carries `recorded_at` (when Sluice would record it). @default true */
  recordedAt?: boolean;
}

/** A generated second-product row: an ingest input (`dataset`, the columns, maybe `recorded_at`). */
export type GeneratedDatasetRow = { dataset: SecondProductDataset; recorded_at?: string } & Record<
  string,
  unknown
>;

/**
 * Generates the second product's rows (`@sluice/core` catalogue samples over one shared world of projects,
 * contacts and links), deterministic for the same options, in recorded-time order. `message_events` gives a
 * message's later receipt as a second whole row (some the next day); `organization_id` is left to ingest.
 */
export function* generateDatasetRows(
  options: GenerateDatasetRowsOptions,
): Generator<GeneratedDatasetRow, void, undefined> {
  const { count, from, to, dataset } = options;
  if (!(to > from)) throw new RangeError('generateDatasetRows: `to` must be after `from`');
  const baseSeed = seedOf(options.seed ?? 1, options.workspaceId);
  const world = sampleWorld(baseSeed);
  const random = mulberry32(baseSeed ^ fnv1a(dataset));
  const span = to - from;
  const rows: SampleRow[] = [];
  for (let i = 0; i < count; i++) {
    const timeMs = from + Math.max(1, Math.ceil(((i + 1) * span) / count));
    if (dataset === 'message_events') rows.push(...sampleMessageEvents(world, random, timeMs, to));
    else if (dataset === 'click_events') rows.push(sampleClickEvent(world, random, timeMs));
    else if (dataset === 'opt_out_events') rows.push(sampleOptOutEvent(world, random, timeMs));
    else rows.push(sampleProjectSummary(world, random, timeMs));
  }
  rows.sort((a, b) => a.atMs - b.atMs);
  const withRecordedAt = options.recordedAt ?? true;
  for (const { atMs, row } of rows) {
    yield { dataset, ...row, ...(withRecordedAt ? { recorded_at: iso(atMs) } : {}) };
  }
}
