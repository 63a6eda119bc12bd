/** `opt_out_events`: one row per opt-out (reference 004). */
import { z } from 'zod';
import type { ColumnSpec } from './columns.js';
import { phone } from './fields.js';
import { hex, pick, type Random, weighted } from './random.js';
import { iso, type SampleWorld } from './sample-world.js';
import { secondProductDataset } from './second-product.js';
import type { SampleRow } from './types.js';

/** `opt_out_events.source`. */
export const OPT_OUT_SOURCES = ['Replied', 'CSV Upload', 'Tagged', 'Manual'] as const;

const SPECS = [
  ['opt_out_id', 'string', false, 'Opt-out id'],
  ['phone_number', 'string', false, 'Opted-out number (E.164)', phone({ shortCodes: false })],
  [
    'source',
    'string',
    true,
    'How the opt-out was recorded: `Replied`, `CSV Upload`, `Tagged` or `Manual`',
    z.enum(OPT_OUT_SOURCES),
  ],
  ['opt_out_message', 'string', true, 'The reply that triggered it, when there was one'],
  ['brand_id', 'string', true, 'Brand the opt-out list belongs to'],
  ['organization_id', 'string', false, 'Owning organization'],
  ['opted_out_at', 'timestamp_millis_utc', true, 'When the person opted out'],
  ['created_at', 'timestamp_millis_utc', false, 'When the row was created'],
] as const satisfies readonly ColumnSpec[];

/** The columns of an `opt_out_events` row (normalized). */
export interface OptOutEventColumns extends Record<string, unknown> {
  opt_out_id: string;
  phone_number: string;
  source: (typeof OPT_OUT_SOURCES)[number] | null;
  opt_out_message: string | null;
  brand_id: string | null;
  organization_id: string;
  opted_out_at: string | null;
  created_at: string;
}

export const optOutEvents = secondProductDataset<'opt_out_events', OptOutEventColumns>({
  name: 'opt_out_events',
  semantics: 'append',
  summary: 'One row per opt-out, in the window of the time Sluice recorded it.',
  specs: SPECS,
  idField: 'opt_out_id',
  erasure: { phone: ['phone_number'] },
});
export type OptOutEventRow = z.output<typeof optOutEvents.schema>;

/** A sample `opt_out_events` row at `timeMs`, with its source (most are replies such as `STOP`). */
export function sampleOptOutEvent(world: SampleWorld, random: Random, timeMs: number): SampleRow {
  const contact = pick(random, world.contacts);
  const source = weighted<(typeof OPT_OUT_SOURCES)[number]>([
    ['Replied', 70],
    ['CSV Upload', 12],
    ['Tagged', 10],
    ['Manual', 8],
  ])(random);
  const optedOutMs =
    source === 'CSV Upload' ? timeMs - Math.floor(random() * 30 * 86_400_000) : timeMs - 1_000;
  return {
    atMs: timeMs,
    row: {
      opt_out_id: `opt_${hex(random, 16)}`,
      phone_number: contact.phone_number,
      source,
      opt_out_message:
        source === 'Replied' ? pick(random, ['STOP', 'stop', 'UNSUBSCRIBE', 'Stop texting me']) : null,
      brand_id: pick(random, world.projects).brand_id,
      opted_out_at: random() < 0.95 ? iso(Math.max(0, optedOutMs)) : null,
      created_at: iso(timeMs),
    },
  };
}
