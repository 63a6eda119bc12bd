import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  assertRateLimit,
  nextRateStep,
  type RateLimit,
  type RateStep,
  retryAfterSeconds,
} from '@sluice/core';
import { type ApiKeyRecord, hashApiKey, parseApiKey, toApiKeyRecord } from './api-keys.js';
import {
  type ControlTable,
  type ControlTableOptions,
  isConditionFailed,
  mapDynamoError,
  resolveControlTable,
} from './client.js';
import { API_KEY_SK, apiKeyPk } from './items.js';

/** The outcome of one request's key: its current record, or why it may not proceed. */
export type ApiKeyUse =
  | { outcome: 'allowed'; record: ApiKeyRecord }
  /** Malformed, never issued, revoked or deleted. */
  | { outcome: 'unknown' }
  | { outcome: 'limited'; retryAfterSeconds: number };

/** What {@link ApiKeyMeter} needs. */
export interface ApiKeyMeterOptions extends ControlTableOptions {
  /** Requests per second and burst, per key. */
  limit: RateLimit;
  /** @default () => new Date() */
  now?: () => Date;
}

/** Keys whose last known state one instance remembers; past this, it forgets them all (a lower bound stays safe). */
const MAX_REMEMBERED_KEYS = 10_000;
/** Conditional writes a request tries before it is refused as limited (only concurrent requests race). */
const MAX_ATTEMPTS = 4;

/** Every write's condition: the key exists, is complete and is not revoked. */
const KEY_IS_USABLE = 'attribute_exists(PK) AND attribute_exists(keyId) AND attribute_not_exists(revokedAt)';

/**
 * Counts each API request against its key's rate limit, and returns the key's current record: one
 * conditional UpdateItem on the key item per allowed request (the GCRA step of `@sluice/core`, and
 * `lastUsedAt`, in the same write). So, in the API function, on every request:
 * - a revoked, deleted or incomplete key is refused at once, whatever the authorizer's cache still holds;
 * - the role and scopes are the stored ones, so a narrowed key is narrowed at once;
 * - the last use costs no write of its own.
 *
 * Each instance remembers the last `rateTat` it saw per key. The stored value only grows, so a request the
 * remembered value already refuses is refused without any database call: a caller over its limit costs no
 * DynamoDB at all, and the writes per key a second are bounded by the limit itself (plus a failed write
 * when instances race or a guess is stale).
 */
export class ApiKeyMeter {
  private readonly table: ControlTable;
  private readonly limit: RateLimit;
  private readonly now: () => Date;
  private readonly lastTat = new Map<string, number>();

  constructor(options: ApiKeyMeterOptions) {
    this.table = resolveControlTable(options);
    this.limit = assertRateLimit(options.limit);
    this.now = options.now ?? (() => new Date());
  }

  /**
   * Uses the key for one request:
   * 1. a malformed key or wrong checksum is `unknown`, without any read;
   * 2. the step for the remembered state: `limited` is answered at once;
   * 3. the conditional write; on success, `allowed` with the record written;
   * 4. on a failed condition, the stored item tells why: gone or revoked is `unknown`, otherwise its
   *    `rateTat` gives the next step (back to 2).
   */
  async use(apiKey: string): Promise<ApiKeyUse> {
    const parsed = parseApiKey(apiKey);
    if (!parsed.ok) return { outcome: 'unknown' };
    const keyHash = hashApiKey(parsed.apiKey);
    const now = this.now();
    let tat = this.lastTat.get(keyHash);
    let step = nextRateStep(tat, now.getTime(), this.limit);
    for (let attempt = 0; attempt < MAX_ATTEMPTS && step.kind !== 'limited'; attempt++) {
      const written = await this.write(keyHash, step, now);
      if (written.kind === 'allowed') {
        this.remember(keyHash, written.tat);
        return { outcome: 'allowed', record: written.record };
      }
      if (written.kind === 'unknown') {
        this.lastTat.delete(keyHash);
        return { outcome: 'unknown' };
      }
      tat = written.tat;
      if (tat !== undefined) this.remember(keyHash, tat);
      step = nextRateStep(tat, now.getTime(), this.limit);
    }
    return {
      outcome: 'limited',
      retryAfterSeconds: retryAfterSeconds(step.kind === 'limited' ? step.retryAfterMs : 0),
    };
  }

  private remember(keyHash: string, tat: number): void {
    if (this.lastTat.size >= MAX_REMEMBERED_KEYS && !this.lastTat.has(keyHash)) this.lastTat.clear();
    this.lastTat.set(keyHash, tat);
  }

  /** One conditional write of a `start` or `continue` step; on a failed condition, the stored state. */
  private async write(
    keyHash: string,
    step: Exclude<RateStep, { kind: 'limited' }>,
    now: Date,
  ): Promise<
    | { kind: 'allowed'; record: ApiKeyRecord; tat: number }
    | { kind: 'unknown' }
    | { kind: 'stale'; tat: number | undefined }
  > {
    const common = {
      TableName: this.table.tableName,
      Key: { PK: apiKeyPk(keyHash), SK: API_KEY_SK },
      ReturnValues: 'ALL_NEW' as const,
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
    };
    const command =
      step.kind === 'start'
        ? new UpdateCommand({
            ...common,
            UpdateExpression: 'SET rateTat = :tat, lastUsedAt = :now',
            ConditionExpression: `${KEY_IS_USABLE} AND (attribute_not_exists(rateTat) OR rateTat < :nowMs)`,
            ExpressionAttributeValues: {
              ':tat': step.newTat,
              ':now': now.toISOString(),
              ':nowMs': now.getTime(),
            },
          })
        : new UpdateCommand({
            ...common,
            UpdateExpression: 'SET rateTat = rateTat + :interval, lastUsedAt = :now',
            ConditionExpression: `${KEY_IS_USABLE} AND rateTat BETWEEN :nowMs AND :maxTat`,
            ExpressionAttributeValues: {
              ':interval': step.intervalMs,
              ':now': now.toISOString(),
              ':nowMs': now.getTime(),
              ':maxTat': step.maxTat,
            },
          });
    try {
      const result = await this.table.client.send(command);
      const record = toApiKeyRecord(keyHash, result.Attributes);
      if (record === undefined) return { kind: 'unknown' };
      return { kind: 'allowed', record, tat: Number(result.Attributes?.rateTat) };
    } catch (error) {
      if (!isConditionFailed(error)) return mapDynamoError(error);
      return storedState((error as { Item?: Record<string, RawAttribute> }).Item);
    }
  }
}

/** An attribute as DynamoDB returns it on a failed condition (not unmarshalled by the document client). */
type RawAttribute = { S?: string; N?: string };

/** Why a condition failed, from the raw item DynamoDB returned with it. */
function storedState(
  item: Record<string, RawAttribute> | undefined,
): { kind: 'unknown' } | { kind: 'stale'; tat: number | undefined } {
  if (item === undefined || item.keyId?.S === undefined || item.revokedAt !== undefined)
    return { kind: 'unknown' };
  const tat = item.rateTat?.N === undefined ? undefined : Number(item.rateTat.N);
  return { kind: 'stale', tat };
}
