import type { EventPage } from '@sluice/eventlog';
import { describe, expect, it } from 'vitest';
import { latestPerKey, lineKeyOf } from './latest-per-key.js';

/** A window's lines in recorded order, paged by two, read from after a position like the event log. */
function source(rows: { id: string; status: string }[]) {
  const all = rows.map((row, i) => ({
    line: JSON.stringify(row),
    key: `${String(i).padStart(13, '0')}#x`,
    ms: i,
  }));
  return async function* read(afterKey?: string): AsyncGenerator<EventPage> {
    const from = afterKey === undefined ? 0 : all.findIndex((entry) => entry.key === afterKey) + 1;
    for (let at = from; at < all.length; at += 2) {
      const part = all.slice(at, at + 2);
      yield {
        lines: part.map((e) => e.line),
        keys: part.map((e) => e.key),
        recordedMs: part.map((e) => e.ms),
      };
    }
  };
}

async function collect(pages: AsyncIterable<EventPage>) {
  const out: { line: string; key: string }[] = [];
  for await (const page of pages)
    for (const [i, line] of page.lines.entries()) out.push({ line, key: page.keys[i] as string });
  return out;
}

const rows = [
  { id: 'm1', status: 'queued' },
  { id: 'm2', status: 'queued' },
  { id: 'm1', status: 'sent' },
  { id: 'm3', status: 'queued' },
  { id: 'm2', status: 'failed' },
  { id: 'm1', status: 'delivered' },
];

describe('latestPerKey', () => {
  it('keeps the last line of each key in the window, in recorded order', async () => {
    const kept = await collect(latestPerKey(source(rows), lineKeyOf('id')));
    expect(kept.map((entry) => JSON.parse(entry.line))).toEqual([
      { id: 'm3', status: 'queued' },
      { id: 'm2', status: 'failed' },
      { id: 'm1', status: 'delivered' },
    ]);
  });

  it('resumes after a position with the lines one pass gives after it', async () => {
    const whole = await collect(latestPerKey(source(rows), lineKeyOf('id')));
    const resumed = await collect(latestPerKey(source(rows), lineKeyOf('id'), whole[0]?.key));
    expect(resumed).toEqual(whole.slice(1));
  });
});
