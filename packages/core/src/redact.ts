/**
 * Defence in depth for logs: no code path logs a secret on purpose, and this replacer (given to every
 * Powertools Logger as `jsonReplacerFn`) masks one that slips in anyway — by field name, and any API key
 * found inside a string.
 */

/** Field names whose values are never logged (compared lower-cased, without `_` and `-`). */
const SECRET_FIELD_NAMES: ReadonlySet<string> = new Set([
  'secretaccesskey',
  'secret',
  'authorization',
  'apikey',
  'password',
  'plaintext',
  'sessiontoken',
  'leasetoken',
]);

/** A Sluice API key inside any text. */
const API_KEY_PATTERN = /slk_[0-9A-Za-z]{20,}/g;

/** The mask that replaces a secret. */
export const REDACTED = '[redacted]';

/** A JSON replacer that masks secrets: see the module comment. */
export function redactSecrets(key: string, value: unknown): unknown {
  if (key !== '' && SECRET_FIELD_NAMES.has(key.toLowerCase().replace(/[-_]/g, ''))) {
    return value === undefined || value === null ? value : REDACTED;
  }
  if (typeof value === 'string' && value.includes('slk_')) return value.replace(API_KEY_PATTERN, REDACTED);
  return value;
}
