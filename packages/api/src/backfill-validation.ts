/**
 * Validation of the backfill requests, in the two stages of `validation.ts`: a body that does not match the
 * OpenAPI `createBackfill` schema is `422 unprocessable_entity` (an unknown dataset, a `from` that is neither a
 * date-time nor `"earliest"`); a range that matches it but cannot be exported is `400 invalid_input` (longer
 * than seven days, in the future, before the earliest available data, `to` not after `from`).
 */
import {
  type ArchivedSpan,
  BACKFILL_ID_RE,
  EVENT_DATASETS,
  type EventDataset,
  earliestAvailableMs,
  type InputIssue,
  MAX_BACKFILL_RANGE_MS,
} from '@sluice/core';
import { z } from 'zod';
import { CLOCK_SKEW_MS, invalidInput, parseSchema, unknownFields } from './validation.js';

const dateTime = z.iso.datetime({ offset: true });

/** Stage 1: the OpenAPI `createBackfill` request schema. */
export const createBackfillRequestSchema = z.looseObject({
  datasets: z.array(z.enum(EVENT_DATASETS)).min(1).optional(),
  from: z.union([z.literal('earliest'), dateTime]),
  to: dateTime.optional(),
});

const KNOWN_FIELDS = ['datasets', 'from', 'to'] as const;

/** A valid backfill request, in epoch milliseconds. */
export interface CreateBackfillRequest {
  datasets: EventDataset[];
  fullHistory: boolean;
  fromMs: number;
  toMs: number;
}

/**
 * Validates a create-backfill body. `datasets` defaults to the destination's event datasets and must be
 * among them; `"from": "earliest"` starts at the earliest available data (`to` defaults to now, any length);
 * otherwise `from` and `to` are both required, `to` after `from`, at most seven days apart, not in the future
 * and not before the earliest available data.
 */
export function parseCreateBackfillRequest(
  body: unknown,
  context: {
    now: Date;
    eventRetentionMs: number;
    destinationDatasets: readonly string[];
    /** What the event archive holds of each dataset, when it holds anything. */
    archives?: ReadonlyMap<EventDataset, ArchivedSpan>;
  },
): CreateBackfillRequest {
  const parsed = parseSchema(createBackfillRequestSchema, body);
  const issues: InputIssue[] = unknownFields(body as object, KNOWN_FIELDS);
  const nowMs = context.now.getTime();
  const exported = EVENT_DATASETS.filter((dataset) => context.destinationDatasets.includes(dataset));
  const datasets = parsed.datasets ?? exported;
  datasets.forEach((dataset, index) => {
    if (datasets.indexOf(dataset) !== index) {
      issues.push({ path: `datasets[${index}]`, message: `Dataset "${dataset}" is listed twice.` });
    } else if (!exported.includes(dataset)) {
      issues.push({
        path: `datasets[${index}]`,
        message: `This data export does not export "${dataset}"; add it to the export's datasets first.`,
        allowedValues: exported,
      });
    }
  });
  if (datasets.length === 0) {
    issues.push({ path: 'datasets', message: 'This data export exports no event dataset to backfill.' });
  }
  // The latest of the datasets' earliest times: every dataset of the backfill is available from there.
  const earliestMs =
    datasets.length === 0
      ? earliestAvailableMs(nowMs, context.eventRetentionMs)
      : Math.max(
          ...datasets.map((dataset) =>
            earliestAvailableMs(nowMs, context.eventRetentionMs, context.archives?.get(dataset)),
          ),
        );
  const fullHistory = parsed.from === 'earliest';
  const fromMs = fullHistory ? earliestMs : Date.parse(parsed.from);
  const toMs = parsed.to === undefined ? nowMs : Date.parse(parsed.to);
  if (!fullHistory && parsed.to === undefined) {
    issues.push({
      path: 'to',
      message: 'Required with a date-time "from" (only "from": "earliest" may omit it).',
    });
  }
  if (toMs > nowMs + CLOCK_SKEW_MS) {
    issues.push({ path: 'to', message: 'to cannot be in the future.' });
  }
  if (!fullHistory) {
    if (fromMs < earliestMs) {
      issues.push({
        path: 'from',
        message: `from is before the earliest available data, ${new Date(earliestMs).toISOString()}.`,
      });
    }
    if (toMs <= fromMs) issues.push({ path: 'to', message: 'to must be after from.' });
    else if (toMs - fromMs > MAX_BACKFILL_RANGE_MS) {
      issues.push({
        path: 'to',
        message: 'A backfill covers at most 7 days; split a longer range, or send "from": "earliest".',
      });
    }
  }
  if (issues.length > 0) throw invalidInput(issues);
  return { datasets: [...datasets], fullHistory, fromMs, toMs: Math.min(toMs, nowMs) };
}

/** Parses the `nextToken` of the backfills list: a backfill id this API returned (absent: the first page). */
export function parseBackfillsToken(raw: string | undefined): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!BACKFILL_ID_RE.test(raw)) {
    throw invalidInput([
      {
        path: 'nextToken',
        message: 'nextToken is not one this API returned: send the nextToken of the previous page.',
      },
    ]);
  }
  return raw;
}
