/**
 * The field rules the datasets' row schemas share: ids, timestamps, optional strings, phone numbers, int32.
 *
 * Pure: no AWS SDK.
 */
import { z } from 'zod';

/**
 * Ids (event ids, subscriber ids): 1 to 256 printable ASCII characters, no spaces. Keeping them ASCII makes
 * JavaScript string order equal DynamoDB's byte order, which the event log reader's shard merge relies on.
 */
export const ID_PATTERN = /^[\x21-\x7e]{1,256}$/;

export const id = z.string().regex(ID_PATTERN, 'must be 1 to 256 printable ASCII characters without spaces');

/**
 * A timestamp: an ISO 8601 string with `Z` or an offset, or epoch milliseconds. Always normalized to
 * `YYYY-MM-DDTHH:mm:ss.sssZ` (UTC), so every row spells time the same way.
 */
export const timestamp = z
  .union([z.iso.datetime({ offset: true }), z.number().int().nonnegative()])
  .transform((value, ctx) => {
    const ms = typeof value === 'number' ? value : Date.parse(value);
    if (!Number.isFinite(ms) || ms < 0 || ms > 8_640_000_000_000_000) {
      ctx.addIssue({ code: 'custom', message: 'is not a valid time' });
      return z.NEVER;
    }
    return new Date(ms).toISOString();
  });

/** An optional string of at most `max` characters, `null` when absent. */
export const str = (max: number) =>
  z
    .string()
    .max(max)
    .nullish()
    .transform((v) => v ?? null);
/** An optional id, `null` when absent. */
export const optId = id.nullish().transform((v) => v ?? null);
/** A free-form object, `{}` when absent. */
export const attributes = z
  .record(z.string(), z.unknown())
  .nullish()
  .transform((v) => v ?? {});

/** Makes a field optional: `null` when absent. */
export function nullable<T extends z.ZodType>(schema: T) {
  return schema.nullish().transform((v) => (v ?? null) as z.output<T> | null);
}

/** A Parquet INT32. */
export const int32 = z.number().int().min(-2_147_483_648).max(2_147_483_647);

/**
 * A phone number normalized to E.164 (`+15555550123`): spaces, dashes, dots and parentheses are removed; a
 * number without `+` of 10 digits, or 11 beginning with `1`, is North American (`+1`). With `shortCodes`, 3 to
 * 6 digits are a short code, kept as it is (`471016`). Anything else is refused, naming the rule.
 */
export function normalizePhone(value: string, shortCodes: boolean): string | undefined {
  const compact = value.trim().replace(/[\s().-]/g, '');
  if (/^\+[1-9]\d{7,14}$/.test(compact)) return compact;
  if (!/^\d+$/.test(compact)) return undefined;
  if (shortCodes && compact.length >= 3 && compact.length <= 6) return compact;
  if (compact.length === 10 && /^[2-9]/.test(compact)) return `+1${compact}`;
  if (compact.length === 11 && compact.startsWith('1')) return `+${compact}`;
  return undefined;
}

const PHONE_RULE =
  'must be a phone number in E.164 (+15555550123), or a North American one without + (10 digits, or 11 beginning with 1)';

/** A phone number in E.164; with `shortCodes`, 3 to 6 digits are kept as a short code. */
export function phone(options: { shortCodes: boolean }) {
  return z
    .string()
    .max(64)
    .transform((value, ctx) => {
      const normalized = normalizePhone(value, options.shortCodes);
      if (normalized === undefined) {
        ctx.addIssue({
          code: 'custom',
          message: options.shortCodes ? `${PHONE_RULE}, or a short code of 3 to 6 digits` : PHONE_RULE,
        });
        return z.NEVER;
      }
      return normalized;
    });
}

/**
 * A carrier error code in the dashboard's display form: a 5-digit code beginning with `40` loses the `40`
 * (`40300` → `300`); any other code is kept as sent. Numbers are read as their decimal digits.
 */
export const carrierErrorCode = nullable(
  z.union([z.string().max(256), z.number().int().nonnegative()]).transform((value) => {
    const code = String(value);
    return /^40\d{3}$/.test(code) ? code.slice(2) : code;
  }),
);
