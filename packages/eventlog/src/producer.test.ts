import { describe, expect, it } from 'vitest';
import { MAX_BUS_ENTRY_BYTES } from './bus.js';
import { busEntries } from './producer.js';

/** EventBridge's entry size: UTF-8 bytes of Source, DetailType and Detail, plus 14 for Time. */
function entrySize(entry: { Source: string; DetailType: string; Detail: string }): number {
  return (
    Buffer.byteLength(entry.Source) +
    Buffer.byteLength(entry.DetailType) +
    Buffer.byteLength(entry.Detail) +
    14
  );
}

function event(i: number, padding: number) {
  return {
    dataset: 'custom_events',
    id: `ce_${i}`,
    event_name: 'x',
    occurred_at: 1,
    note: 'é'.repeat(padding),
  };
}

describe('busEntries', () => {
  it('packs events in order into entries under the 256 KB limit, each a valid sluice.events detail', () => {
    // Prepare: 2,000 events of about 600 bytes, with two-byte characters
    const events = Array.from({ length: 2_000 }, (_, i) => event(i, 280));

    // Act
    const entries = busEntries('arn:aws:events:eu-west-1:123456789012:event-bus/sluice', 'acme', events);

    // Assess
    expect(entries.length).toBeGreaterThan(4);
    for (const entry of entries) {
      expect(entrySize(entry)).toBeLessThanOrEqual(MAX_BUS_ENTRY_BYTES);
      expect(entry).toMatchObject({ Source: 'sluice.workspace.acme', DetailType: 'sluice.events' });
    }
    const details = entries.map(
      (entry) => JSON.parse(entry.Detail) as { workspaceId: string; events: unknown[] },
    );
    expect(details.every((d) => d.workspaceId === 'acme')).toBe(true);
    expect(details.flatMap((d) => d.events)).toEqual(events);
    // Packed, not one event per entry: all but the last are at least three-quarters full.
    expect(entries.slice(0, -1).every((entry) => entrySize(entry) > 0.75 * MAX_BUS_ENTRY_BYTES)).toBe(true);
  });

  it('refuses an event that alone does not fit, naming it', () => {
    expect(() => busEntries('sluice', 'acme', [event(0, 1), event(1, 200_000)])).toThrow(
      /^event 1 is \d+ bytes in an entry, over the 262144-byte limit$/,
    );
  });

  it('makes no entry for no events', () => {
    expect(busEntries('sluice', 'acme', [])).toEqual([]);
  });
});
