import { InvalidInputError } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { parseCreateBackfillRequest } from './backfill-validation.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const now = new Date('2026-12-03T12:00:00.000Z');
const NOW = now.getTime();
/** A hot log of one day. */
const RETENTION = DAY;
const context = { now, eventRetentionMs: RETENTION, destinationDatasets: ['email_events', 'sms_events'] };

const range = (fromMs: number, toMs: number, datasets = ['email_events']) => ({
  datasets,
  from: new Date(fromMs).toISOString(),
  to: new Date(toMs).toISOString(),
});

function issuesOf(run: () => unknown): { path: string; message: string }[] {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInputError);
    return (error as InvalidInputError).issues as { path: string; message: string }[];
  }
  throw new Error('no error');
}

describe('parseCreateBackfillRequest: the earliest available data', () => {
  it('refuses a range before the hot log when there is no archive', () => {
    // Act
    const issues = issuesOf(() => parseCreateBackfillRequest(range(NOW - 3 * DAY, NOW - 2 * DAY), context));

    // Assess
    expect(issues.map((issue) => issue.path)).toEqual(['from']);
    expect(issues[0]?.message).toContain(new Date(NOW - RETENTION).toISOString());
  });

  it('accepts a range the archive holds, and a full history starts at the archive start', () => {
    // Prepare: the archive holds 400 days of email events, up to an hour ago
    const archives = new Map([
      ['email_events' as const, { startMs: NOW - 400 * DAY, throughMs: NOW - HOUR }],
    ]);

    // Act
    const ranged = parseCreateBackfillRequest(range(NOW - 300 * DAY, NOW - 299 * DAY), {
      ...context,
      archives,
    });
    const full = parseCreateBackfillRequest(
      { datasets: ['email_events'], from: 'earliest' },
      {
        ...context,
        archives,
      },
    );

    // Assess
    expect(ranged.fromMs).toBe(NOW - 300 * DAY);
    expect(full).toMatchObject({ fullHistory: true, fromMs: NOW - 400 * DAY, toMs: NOW });
  });

  it('takes the latest earliest time of the datasets asked for', () => {
    // Prepare: only email events are archived
    const archives = new Map([
      ['email_events' as const, { startMs: NOW - 400 * DAY, throughMs: NOW - HOUR }],
    ]);

    // Act
    const issues = issuesOf(() =>
      parseCreateBackfillRequest(range(NOW - 3 * DAY, NOW - 2 * DAY, ['email_events', 'sms_events']), {
        ...context,
        archives,
      }),
    );

    // Assess
    expect(issues.map((issue) => issue.path)).toEqual(['from']);
  });

  it('ignores an archive that stopped before the hot log begins: the rows between are gone', () => {
    // Prepare: the archive ends two days ago, the hot log keeps one
    const archives = new Map([
      ['email_events' as const, { startMs: NOW - 400 * DAY, throughMs: NOW - 2 * DAY }],
    ]);

    // Act
    const issues = issuesOf(() =>
      parseCreateBackfillRequest(range(NOW - 300 * DAY, NOW - 299 * DAY), { ...context, archives }),
    );

    // Assess
    expect(issues.map((issue) => issue.path)).toEqual(['from']);
  });
});
