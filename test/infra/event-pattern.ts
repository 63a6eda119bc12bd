/**
 * A matcher for the part of the EventBridge event pattern language the Sluice rules use, to test synthesized
 * rules against sample entries (no maintained npm package matches EventBridge patterns; the AWS
 * `TestEventPattern` call needs an account). Top-level fields only; per field a list of alternatives, each an
 * exact string, `{ prefix }`, or `{ "anything-but": <string | string[] | { prefix }> }`. Anything else throws,
 * so a rule that starts using more of the language fails its test instead of matching by accident.
 */

/** An EventBridge entry as a rule sees it (the fields Sluice's rules read). */
export interface SampleEntry {
  source: string;
  'detail-type': string;
  account: string;
}

type Alternative = string | { prefix?: unknown; 'anything-but'?: unknown };

function matchesOne(value: string, alternative: Alternative): boolean {
  if (typeof alternative === 'string') return value === alternative;
  const keys = Object.keys(alternative);
  if (keys.length === 1 && typeof alternative.prefix === 'string')
    return value.startsWith(alternative.prefix);
  if (keys.length === 1 && 'anything-but' in alternative) {
    const but = alternative['anything-but'];
    if (typeof but === 'string') return value !== but;
    if (Array.isArray(but) && but.every((item) => typeof item === 'string')) return !but.includes(value);
    if (typeof but === 'object' && but !== null) {
      const prefix = (but as { prefix?: unknown }).prefix;
      if (Object.keys(but).length === 1 && typeof prefix === 'string') return !value.startsWith(prefix);
    }
  }
  throw new Error(`pattern matcher: unsupported alternative ${JSON.stringify(alternative)}`);
}

/** True when `entry` matches `pattern` (every field of the pattern, one of its alternatives each). */
export function matchesPattern(pattern: Record<string, unknown>, entry: SampleEntry): boolean {
  return Object.entries(pattern).every(([field, alternatives]) => {
    if (!(field in entry)) throw new Error(`pattern matcher: unsupported field ${field}`);
    if (!Array.isArray(alternatives)) throw new Error(`pattern matcher: ${field} is not a list`);
    const value = entry[field as keyof SampleEntry];
    return (alternatives as Alternative[]).some((alternative) => matchesOne(value, alternative));
  });
}
