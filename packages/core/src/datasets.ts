/** The datasets a destination can export. */
export const DATASETS = ['email_events', 'sms_events', 'custom_events', 'subscribers'] as const;
export type Dataset = (typeof DATASETS)[number];

/** Datasets exported as recorded-time windows of events. */
export const EVENT_DATASETS = ['email_events', 'sms_events', 'custom_events'] as const;
export type EventDataset = (typeof EVENT_DATASETS)[number];

/** The datasets a new destination exports when the request names none. */
export const DEFAULT_DATASETS: readonly Dataset[] = ['email_events', 'custom_events', 'subscribers'];

/** True for a known dataset name. */
export function isDataset(value: string): value is Dataset {
  return (DATASETS as readonly string[]).includes(value);
}

export function isEventDataset(dataset: Dataset): dataset is EventDataset {
  return dataset !== 'subscribers';
}

export const FREQUENCIES = ['every_5_minutes', 'every_15_minutes', 'hourly', 'daily'] as const;
export type Frequency = (typeof FREQUENCIES)[number];
export const DEFAULT_FREQUENCY: Frequency = 'every_15_minutes';

const MINUTE_MS = 60_000;
/** How often each frequency runs, in milliseconds. */
export const FREQUENCY_MS: Record<Frequency, number> = {
  every_5_minutes: 5 * MINUTE_MS,
  every_15_minutes: 15 * MINUTE_MS,
  hourly: 60 * MINUTE_MS,
  daily: 24 * 60 * MINUTE_MS,
};

/** The current version of every row schema. */
export const SCHEMA_VERSION = 1;
