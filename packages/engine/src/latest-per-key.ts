import type { EventPage } from '@sluice/eventlog';

/**
 * The lines of one window of a current-row dataset, at most one per key (message): the last one recorded in
 * the window, the message's state at the window's end. Two passes over the window: the first notes each
 * key's last position, the second yields the lines at those positions, from `afterKey` on (a writer resumed
 * there gets the same lines as one pass, so the files are byte-identical). Memory holds one position per
 * key changed in the window; the window is read twice.
 */
export async function* latestPerKey(
  read: (afterKey?: string) => AsyncIterable<EventPage>,
  keyOf: (line: string) => string,
  afterKey?: string,
): AsyncGenerator<EventPage> {
  const last = new Map<string, string>();
  for await (const page of read()) {
    for (const [i, line] of page.lines.entries()) last.set(keyOf(line), page.keys[i] as string);
  }
  for await (const page of read(afterKey)) {
    const kept: EventPage = { lines: [], keys: [], recordedMs: [] };
    for (const [i, line] of page.lines.entries()) {
      const key = page.keys[i] as string;
      if (last.get(keyOf(line)) !== key) continue;
      kept.lines.push(line);
      kept.keys.push(key);
      kept.recordedMs.push(page.recordedMs[i] as number);
    }
    if (kept.lines.length > 0) yield kept;
  }
}

/** The key of a stored line: the value of `field` in its JSON object. */
export function lineKeyOf(field: string): (line: string) => string {
  return (line) => String((JSON.parse(line) as Record<string, unknown>)[field]);
}
