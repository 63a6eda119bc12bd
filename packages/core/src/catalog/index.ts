/**
 * The dataset catalogue: one module per dataset holds everything Sluice knows about it (row schema and
 * normalisation, stored line and file columns in order, Parquet types, export semantics, erasure keys,
 * documentation). Adding a dataset is one module here, its name in `../datasets.ts`, and its tests.
 *
 * Pure: no AWS SDK.
 */
import type { Dataset } from '../datasets.js';
import { clickEvents } from './click-events.js';
import { customEvents } from './custom-events.js';
import { emailEvents } from './email-events.js';
import { messageEvents } from './message-events.js';
import { optOutEvents } from './opt-out-events.js';
import { projectSummary } from './project-summary.js';
import { smsEvents } from './sms-events.js';
import { subscribers } from './subscribers.js';
import type { DatasetDefinition, ErasureKeys } from './types.js';

export * from './click-events.js';
export * from './custom-events.js';
export * from './email-events.js';
export * from './fields.js';
export * from './message-events.js';
export * from './opt-out-events.js';
export * from './project-summary.js';
export { SECOND_PRODUCT_INTERNAL_FIELDS, type SecondProductRow } from './second-product.js';
export * from './sms-events.js';
export * from './subscribers.js';
export * from './types.js';

/** Every dataset's definition, by name, in the order of `DATASETS`. */
export const CATALOG: { readonly [D in Dataset]: DatasetDefinition<D> } = {
  email_events: emailEvents,
  sms_events: smsEvents,
  custom_events: customEvents,
  subscribers,
  message_events: messageEvents,
  project_summary: projectSummary,
  opt_out_events: optOutEvents,
  click_events: clickEvents,
};

/** The definition of one dataset. */
export function datasetDefinition<D extends Dataset>(dataset: D): DatasetDefinition<D> {
  return CATALOG[dataset];
}

/** Every field, over all datasets, that holds an identifier of each kind (erasure searches these). */
export const ERASURE_FIELDS: { readonly [K in keyof ErasureKeys]-?: readonly string[] } = (() => {
  const kinds = ['subscriberId', 'email', 'phone', 'contactId'] as const;
  const out = Object.fromEntries(kinds.map((kind) => [kind, new Set<string>()])) as Record<
    (typeof kinds)[number],
    Set<string>
  >;
  for (const definition of Object.values(CATALOG) as DatasetDefinition[]) {
    for (const kind of kinds) for (const field of definition.erasure[kind] ?? []) out[kind].add(field);
  }
  return Object.fromEntries(kinds.map((kind) => [kind, [...out[kind]]])) as unknown as {
    readonly [K in keyof ErasureKeys]-?: readonly string[];
  };
})();

/**
 * The line a file holds for a line the event log stores: the same line for the first product; for the second,
 * the columns only (Sluice's `id` and `recorded_at` left out), in column order.
 */
export function fileLineOf(dataset: Dataset): ((line: string) => string) | undefined {
  const definition: DatasetDefinition = CATALOG[dataset];
  if (definition.product === 'first') return undefined;
  const names = definition.columns.map((column) => column.name);
  return (line) => {
    const stored = JSON.parse(line) as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const name of names) out[name] = stored[name] ?? null;
    return JSON.stringify(out);
  };
}
export * from './random.js';
export * from './sample-world.js';
