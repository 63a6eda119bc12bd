import type { BackfillView } from '@sluice/api';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  anyActive,
  BACKFILL_REFRESH_MS,
  backfillableDatasets,
  backfillRequest,
  defaultRange,
  Poller,
  progressLines,
  rangeText,
  utcInputMs,
  utcInputValue,
} from './app/backfills.js';

function backfill(extra: Partial<BackfillView> = {}): BackfillView {
  return {
    id: 'bf_0123456789abcdef01234567',
    destinationId: 'exp_1',
    status: 'running',
    fullHistory: false,
    datasets: ['email_events'],
    from: '2026-12-01T00:00:00.000Z',
    to: '2026-12-02T00:00:00.000Z',
    progress: { email_events: { windowsDone: 3, windowsTotal: 24, rows: 1234, files: 3, bytes: 1536 } },
    error: null,
    createdAt: '2026-12-03T10:00:00.000Z',
    startedAt: null,
    finishedAt: null,
    ...extra,
  };
}

describe('the form', () => {
  it('offers the event datasets of the export only, in the API order', () => {
    expect(backfillableDatasets(['subscribers', 'custom_events', 'email_events'])).toEqual([
      'email_events',
      'custom_events',
    ]);
    expect(backfillableDatasets(['subscribers'])).toEqual([]);
  });

  it('reads datetime-local values as UTC, and writes them back to the minute', () => {
    expect(utcInputMs('2026-12-03T10:30')).toBe(Date.parse('2026-12-03T10:30:00Z'));
    expect(utcInputMs('2026-12-03T10:30:15')).toBe(Date.parse('2026-12-03T10:30:15Z'));
    expect(utcInputMs('')).toBeNaN();
    expect(utcInputMs('2026-12-03')).toBeNaN();
    expect(utcInputMs('2026-12-03T10:30+02:00')).toBeNaN();
    expect(utcInputMs('2026-13-03T10:30')).toBeNaN();
    expect(utcInputMs('2026-12-03 10:30')).toBe(Date.parse('2026-12-03T10:30:00Z'));
    expect(utcInputValue(Date.parse('2026-12-03T10:30:45.123Z'))).toBe('2026-12-03 10:30');
  });

  it('starts with the 24 hours before the current UTC hour', () => {
    expect(defaultRange(Date.parse('2026-12-03T10:42:00Z'))).toEqual({
      from: '2026-12-02 10:00',
      to: '2026-12-03 10:00',
    });
  });

  it('sends a range as ISO times in UTC with the chosen datasets', () => {
    // Act
    const request = backfillRequest({
      datasets: ['email_events', 'custom_events'],
      entireHistory: false,
      from: '2026-12-01 00:00',
      to: '2026-12-08 00:00',
    });

    // Assess: exactly 7 days is allowed
    expect(request).toEqual({
      ok: true,
      body: {
        datasets: ['email_events', 'custom_events'],
        from: '2026-12-01T00:00:00.000Z',
        to: '2026-12-08T00:00:00.000Z',
      },
    });
  });

  it('sends "from": "earliest" and no "to" for the entire history, whatever the range inputs hold', () => {
    expect(backfillRequest({ datasets: ['sms_events'], entireHistory: true, from: 'junk', to: '' })).toEqual({
      ok: true,
      body: { datasets: ['sms_events'], from: 'earliest' },
    });
  });

  it('keeps what the API would refuse from being sent, with the issue on the field', () => {
    const issues = (input: Parameters<typeof backfillRequest>[0]) => {
      const request = backfillRequest(input);
      return request.ok ? [] : request.issues.map((issue) => issue.path);
    };
    const range = { datasets: ['email_events'], entireHistory: false };

    expect(issues({ ...range, datasets: [], entireHistory: true, from: '', to: '' })).toEqual(['datasets']);
    expect(issues({ ...range, from: '', to: '' })).toEqual(['from', 'to']);
    expect(issues({ ...range, from: 'yesterday', to: '2026-12-02T00:00' })).toEqual(['from']);
    expect(issues({ ...range, from: '2026-12-02T00:00', to: '2026-12-02T00:00' })).toEqual(['to']);
    expect(issues({ ...range, from: '2026-12-01T00:00', to: '2026-12-08T00:01' })).toEqual(['to']);
    const tooLong = backfillRequest({ ...range, from: '2026-12-01T00:00', to: '2026-12-09T00:00' });
    expect(tooLong.ok ? '' : tooLong.issues[0]?.message).toMatch(/at most 7 days/);
  });
});

describe('the list', () => {
  it("shows each dataset's windows done of total and what it wrote", () => {
    // Prepare: a dataset the API has not reported yet shows as nothing done
    const view = backfill({
      datasets: ['email_events', 'custom_events', 'sms_events'],
      progress: {
        email_events: { windowsDone: 3, windowsTotal: 24, rows: 1234, files: 3, bytes: 1536 },
        sms_events: { windowsDone: 1, windowsTotal: 1, rows: 1, files: 1, bytes: 10 },
      },
    });

    // Act
    const lines = progressLines(view);

    // Assess
    expect(lines).toEqual([
      {
        dataset: 'email_events',
        windowsDone: 3,
        windowsTotal: 24,
        text: '3 of 24 windows · 1,234 rows · 3 files · 1.5 KiB',
      },
      {
        dataset: 'custom_events',
        windowsDone: 0,
        windowsTotal: 0,
        text: '0 of 0 windows · 0 rows · 0 files · 0 B',
      },
      {
        dataset: 'sms_events',
        windowsDone: 1,
        windowsTotal: 1,
        text: '1 of 1 window · 1 row · 1 file · 10 B',
      },
    ]);
  });

  it('says the range, or the entire history from its start', () => {
    expect(rangeText(backfill())).toBe('2026-12-01 00:00 UTC → 2026-12-02 00:00 UTC');
    expect(rangeText(backfill({ fullHistory: true, from: '2024-12-03T00:00:00.000Z' }))).toBe(
      'Entire history, from 2024-12-03 00:00 UTC',
    );
  });

  it('is worth polling while a backfill is queued or running only', () => {
    expect(anyActive([backfill({ status: 'succeeded' }), backfill({ status: 'queued' })])).toBe(true);
    expect(anyActive([backfill({ status: 'running' })])).toBe(true);
    expect(
      anyActive([
        backfill({ status: 'succeeded' }),
        backfill({ status: 'failed' }),
        backfill({ status: 'cancelled' }),
      ]),
    ).toBe(false);
    expect(anyActive([])).toBe(false);
  });
});

describe('Poller', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('reads again every interval while the read answers true, and stops when it answers false', async () => {
    // Prepare: active for three reads, then not
    vi.useFakeTimers();
    const answers = [true, true, true, false];
    let reads = 0;
    const poller = new Poller(async () => answers[reads++] ?? false, BACKFILL_REFRESH_MS);

    // Act
    await poller.refresh();
    await vi.advanceTimersByTimeAsync(BACKFILL_REFRESH_MS * 10);

    // Assess
    expect(reads).toBe(4);
    expect(poller.polling).toBe(false);
  });

  it('starts again on refresh, keeps one timer when refreshes overlap, and reads nothing once stopped', async () => {
    // Prepare: reads that wait for the test to answer them
    vi.useFakeTimers();
    const pending: ((active: boolean) => void)[] = [];
    const poller = new Poller(() => new Promise<boolean>((resolve) => pending.push(resolve)), 1_000);

    // Act: two refreshes in flight; the first answers last
    const first = poller.refresh();
    const second = poller.refresh();
    pending[1]?.(true);
    await second;
    pending[0]?.(true);
    await first;
    await vi.advanceTimersByTimeAsync(1_000);

    // Assess: one timer fired, one read more
    expect(pending).toHaveLength(3);

    // Act: stopped while a read is in flight
    poller.stop();
    pending[2]?.(true);
    await vi.advanceTimersByTimeAsync(10_000);
    await poller.refresh();

    // Assess
    expect(pending).toHaveLength(3);
    expect(poller.polling).toBe(false);
  });
});
