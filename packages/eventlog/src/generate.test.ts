import { parseRow, serializeRow } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { type GeneratedEvent, generatedLine, generateEvents, generateSubscribers } from './generate.js';

const FROM = Date.parse('2026-09-30T00:00:00.000Z');
const TO = FROM + 3_600_000;

describe('generateEvents', () => {
  it('is deterministic for a seed and differs across seeds and workspaces', () => {
    const lines = (seed: number, workspaceId?: string) =>
      [
        ...generateEvents({ count: 50, from: FROM, to: TO, seed, ...(workspaceId ? { workspaceId } : {}) }),
      ].map(generatedLine);
    expect(lines(7)).toEqual(lines(7));
    expect(lines(7)).not.toEqual(lines(8));
    expect(lines(7, 'ws_a')).not.toEqual(lines(7, 'ws_b'));
  });

  it('produces valid rows that serialize as ingest would, recorded in (from, to] in order', () => {
    const events = [...generateEvents({ count: 2_000, from: FROM, to: TO, seed: 1 })];
    expect(events).toHaveLength(2_000);
    let previous = FROM;
    for (const event of events) {
      const { dataset, ...fields } = event;
      const parsed = parseRow(dataset, fields);
      if (!parsed.ok) throw new Error(`${dataset}: ${parsed.reason}`);
      expect(serializeRow(dataset, parsed.row)).toBe(generatedLine(event));
      const recorded = Date.parse(event.recorded_at!);
      expect(recorded).toBeGreaterThan(FROM);
      expect(recorded).toBeLessThanOrEqual(TO);
      expect(recorded).toBeGreaterThanOrEqual(previous);
      expect(Date.parse(event.occurred_at)).toBeLessThanOrEqual(recorded);
      previous = recorded;
    }
    expect(Date.parse(events.at(-1)!.recorded_at!)).toBe(TO);
  });

  it('mixes datasets and email event types plausibly; email rows are several hundred bytes', () => {
    const events = [...generateEvents({ count: 5_000, from: FROM, to: TO, seed: 2 })];
    const byDataset = new Map<string, GeneratedEvent[]>();
    for (const event of events)
      byDataset.set(event.dataset, [...(byDataset.get(event.dataset) ?? []), event]);
    expect(byDataset.get('email_events')!.length).toBeGreaterThan(3_500);
    expect(byDataset.get('sms_events')!.length).toBeGreaterThan(200);
    expect(byDataset.get('custom_events')!.length).toBeGreaterThan(300);
    const emails = byDataset.get('email_events')!;
    const types = new Set(emails.map((event) => (event as { event_type: string }).event_type));
    expect(types.size).toBe(9);
    const bytes =
      emails.reduce((sum, event) => sum + Buffer.byteLength(generatedLine(event)), 0) / emails.length;
    expect(bytes).toBeGreaterThan(550);
    expect(bytes).toBeLessThan(850);
    const clicked = emails.find((event) => (event as { event_type: string }).event_type === 'clicked') as {
      clicked_url: string;
      user_agent: string;
    };
    expect(clicked.clicked_url).toMatch(/^https:\/\/.+utm_source=sluice/);
    expect(clicked.user_agent).toMatch(/^Mozilla|^Microsoft/);
  });

  it('leaves recorded_at to ingest when asked, spreading occurred_at instead', () => {
    const events = [
      ...generateEvents({ count: 10, from: FROM, to: TO, recordedAt: false, mix: { sms_events: 1 } }),
    ];
    expect(events.every((event) => event.dataset === 'sms_events' && !('recorded_at' in event))).toBe(true);
    expect(Date.parse(events.at(-1)!.occurred_at)).toBe(TO);
  });
});

describe('generateSubscribers', () => {
  it('gives valid subscribers whose ids are the ones events refer to', () => {
    const subscribers = [...generateSubscribers({ count: 50, seed: 3 })];
    for (const subscriber of subscribers) expect(parseRow('subscribers', subscriber).ok).toBe(true);
    expect(new Set(subscribers.map((s) => s.id)).size).toBe(50);
    const ids = new Set(subscribers.map((s) => s.id));
    const events = [...generateEvents({ count: 200, from: FROM, to: TO, seed: 3, subscribers: 50 })];
    for (const event of events)
      if (event.subscriber_id !== null) expect(ids.has(event.subscriber_id)).toBe(true);
    expect([...generateSubscribers({ count: 50, seed: 3 })]).toEqual(subscribers);
  });

  it('never repeats an id, for any workspace (ids from the random stream collided a few times in 50,000)', () => {
    // ws_15, ws_17 and ws_20 each had a repeated id among their first 50,000 with ids from the stream.
    for (const workspaceId of ['ws_15', 'ws_17', 'ws_20', 'ws_a']) {
      const ids = new Set<string>();
      for (const subscriber of generateSubscribers({ count: 50_000, workspaceId })) {
        expect(subscriber.id).toMatch(/^sub_[0-9a-f]{12}$/);
        ids.add(subscriber.id);
      }
      expect(ids.size).toBe(50_000);
    }
  });
});
