import { createHash, randomBytes } from 'node:crypto';
import {
  BatchGetCommand,
  GetCommand,
  paginateQuery,
  paginateScan,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { DatabaseUnavailableError, InvalidInputError, RETRY, retrying } from '@sluice/core';
import {
  BATCH_RETRY,
  type ControlTable,
  type ControlTableOptions,
  isConditionFailed,
  mapDynamoError,
  resolveControlTable,
  withDynamoErrors,
} from './client.js';
import { assertNewWorkspaceId } from './workspaces.js';
import {
  API_KEY_INDEX_SK_PREFIX,
  API_KEY_SK,
  apiKeyIndexSk,
  apiKeyPk,
  isKeySafeId,
  workspacePk,
} from './items.js';
import { transact } from './transactions.js';

/** The recognisable prefix of every Sluice API key. */
export const API_KEY_PREFIX = 'slk_';
/** Random base62 characters after the prefix (32 × log2(62) ≈ 190 bits). */
export const API_KEY_RANDOM_LENGTH = 32;
/** Base62 characters of the CRC32 checksum at the end. */
export const API_KEY_CHECKSUM_LENGTH = 6;
/** Total length of a key: prefix, random part, checksum. */
export const API_KEY_LENGTH = API_KEY_PREFIX.length + API_KEY_RANDOM_LENGTH + API_KEY_CHECKSUM_LENGTH;
/** Characters of a key shown for display (`slk_` and four more). */
export const API_KEY_DISPLAY_PREFIX_LENGTH = 8;

/** Roles of a key's holder. Only owners and admins manage exports. */
export const API_KEY_ROLES = ['owner', 'admin', 'member'] as const;
export type ApiKeyRole = (typeof API_KEY_ROLES)[number];

/** Every scope a key can carry; a new key gets all of them unless told otherwise. */
export const API_KEY_SCOPES = [
  'data_exports:read',
  'data_exports:write',
  'data_exports:delete',
  'subscribers:read',
  'analytics:read',
] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

/** An API key as stored: never the key itself, only its SHA-256, beside a public id. */
export interface ApiKeyRecord {
  /** The key's public id (`key_` + 24 hex digits): what operators list and revoke. */
  keyId: string;
  /** SHA-256 hex of the key. */
  keyHash: string;
  workspaceId: string;
  role: ApiKeyRole;
  scopes: ApiKeyScope[];
  /** The first 8 characters of the key, for display. */
  keyPrefix: string;
  createdAt: string;
  /** When the API last allowed a request with it (written with the rate limit's own write). */
  lastUsedAt?: string;
  /** When it was revoked; a revoked key authenticates nothing. */
  revokedAt?: string;
}

/** What `keys list` shows of a key: everything but its hash. */
export type ApiKeySummary = Omit<ApiKeyRecord, 'keyHash'>;

/** Why a string is not a well-formed API key. */
export type ApiKeyFormatProblem = 'missing' | 'prefix' | 'length' | 'characters' | 'checksum';

/** The result of {@link parseApiKey}: the key, or the reason it was refused. */
export type ParsedApiKey = { ok: true; apiKey: string } | { ok: false; reason: ApiKeyFormatProblem };

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const BASE62_PATTERN = /^[0-9A-Za-z]+$/;

const CRC32_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32 (IEEE 802.3, the zlib one) of a string's UTF-8 bytes. */
export function crc32(text: string): number {
  let crc = 0xffffffff;
  for (const byte of Buffer.from(text, 'utf8')) {
    crc = (CRC32_TABLE[(crc ^ byte) & 0xff] as number) ^ (crc >>> 8);
  }
  return (crc ^ 0xffffffff) >>> 0;
}

/** A number as exactly `length` base62 digits, zero-padded (CRC32 < 62^6, so 6 digits always fit). */
function toBase62(value: number, length: number): string {
  let digits = '';
  let rest = value;
  for (let i = 0; i < length; i++) {
    digits = BASE62.charAt(rest % 62) + digits;
    rest = Math.floor(rest / 62);
  }
  return digits;
}

/** The checksum of a key body (prefix and random part): CRC32 in 6 base62 digits. */
export function apiKeyChecksum(body: string): string {
  return toBase62(crc32(body), API_KEY_CHECKSUM_LENGTH);
}

/** `length` uniformly random base62 characters (rejection sampling, no modulo bias). */
function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62.charAt(byte % 62);
    }
  }
  return out;
}

/** Generates a new key: `slk_` + 32 random base62 characters + a 6-character checksum. */
export function generateApiKey(): string {
  const body = API_KEY_PREFIX + randomBase62(API_KEY_RANDOM_LENGTH);
  return body + apiKeyChecksum(body);
}

/**
 * Checks a key's shape and checksum without any database read, so a malformed key or a typo is refused
 * at once. Never echoes the key in the reason.
 */
export function parseApiKey(apiKey: unknown): ParsedApiKey {
  if (typeof apiKey !== 'string' || apiKey.length === 0) return { ok: false, reason: 'missing' };
  if (!apiKey.startsWith(API_KEY_PREFIX)) return { ok: false, reason: 'prefix' };
  if (apiKey.length !== API_KEY_LENGTH) return { ok: false, reason: 'length' };
  const rest = apiKey.slice(API_KEY_PREFIX.length);
  if (!BASE62_PATTERN.test(rest)) return { ok: false, reason: 'characters' };
  const body = apiKey.slice(0, API_KEY_LENGTH - API_KEY_CHECKSUM_LENGTH);
  const checksum = apiKey.slice(API_KEY_LENGTH - API_KEY_CHECKSUM_LENGTH);
  if (apiKeyChecksum(body) !== checksum) return { ok: false, reason: 'checksum' };
  return { ok: true, apiKey };
}

/** SHA-256 hex of a key: the only form in which a key is stored. */
export function hashApiKey(apiKey: string): string {
  return createHash('sha256').update(apiKey, 'utf8').digest('hex');
}

/** True for a known role. */
export function isApiKeyRole(value: unknown): value is ApiKeyRole {
  return typeof value === 'string' && (API_KEY_ROLES as readonly string[]).includes(value);
}

/** True for a known scope. */
export function isApiKeyScope(value: unknown): value is ApiKeyScope {
  return typeof value === 'string' && (API_KEY_SCOPES as readonly string[]).includes(value);
}

/** Public ids of keys: `key_` + 24 hex digits. */
const KEY_ID_RE = /^key_[0-9a-f]{24}$/;

/** A new public key id. */
export function newApiKeyId(): string {
  return `key_${randomBytes(12).toString('hex')}`;
}

/** True for a string shaped like a public key id (anything else names no key, without a read). */
export function isApiKeyId(value: unknown): value is string {
  return typeof value === 'string' && KEY_ID_RE.test(value);
}

/**
 * The record of a key item, or `undefined` when the item is missing or incomplete (no public id, no
 * workspace, an unknown role): such an item authenticates nothing.
 */
export function toApiKeyRecord(
  keyHash: string,
  item: Record<string, unknown> | undefined,
): ApiKeyRecord | undefined {
  if (item === undefined || typeof item.workspaceId !== 'string' || !isApiKeyRole(item.role))
    return undefined;
  if (!isApiKeyId(item.keyId)) return undefined;
  const scopes = Array.isArray(item.scopes) ? item.scopes.filter(isApiKeyScope) : [];
  return {
    keyId: item.keyId,
    keyHash,
    workspaceId: item.workspaceId,
    role: item.role,
    scopes,
    keyPrefix: String(item.keyPrefix ?? ''),
    createdAt: String(item.createdAt ?? ''),
    ...(typeof item.lastUsedAt === 'string' ? { lastUsedAt: item.lastUsedAt } : {}),
    ...(typeof item.revokedAt === 'string' ? { revokedAt: item.revokedAt } : {}),
  };
}

function toSummary(record: ApiKeyRecord): ApiKeySummary {
  const { keyHash: _hash, ...summary } = record;
  return summary;
}

/** What a new key is for. */
export interface CreateApiKeyInput {
  workspaceId: string;
  role: ApiKeyRole;
  /** @default every scope in {@link API_KEY_SCOPES} */
  scopes?: readonly ApiKeyScope[];
  /** @default now */
  now?: Date;
}

const BATCH_GET_SIZE = 100;

/**
 * API keys in the control table. Two items a key:
 * - `PK = KEY#<sha256>`, `SK = KEY`: workspace, public id, role, scopes, timestamps, and the rate limit's
 *   state (`rateTat`, see `ApiKeyMeter`). The authorizer and the API find a key by its hash here;
 * - `PK = WS#<workspace>`, `SK = APIKEY#<keyId>`: the key's hash, so a workspace's keys can be listed and a
 *   key revoked by its public id without a scan or an index.
 */
export class ApiKeyStore {
  private readonly table: ControlTable;

  constructor(options: ControlTableOptions) {
    this.table = resolveControlTable(options);
  }

  /**
   * Creates a key for a workspace. Returns the key, which is shown once and never stored, and its record.
   * 1. validate workspace id, role and scopes; 2. generate the key and its public id; 3. put the key item
   * and the workspace's pointer to it in one transaction, refusing a collision.
   */
  async createApiKey(input: CreateApiKeyInput): Promise<{ apiKey: string; record: ApiKeyRecord }> {
    assertNewWorkspaceId(input.workspaceId);
    if (!isApiKeyRole(input.role)) {
      throw new InvalidInputError('Role is not valid.', [
        { path: 'role', message: 'Unknown role', allowedValues: API_KEY_ROLES },
      ]);
    }
    const scopes = [...new Set(input.scopes ?? API_KEY_SCOPES)];
    const unknown = scopes.filter((scope) => !isApiKeyScope(scope));
    if (unknown.length > 0) {
      throw new InvalidInputError(`Unknown scopes: ${unknown.join(', ')}`, [
        { path: 'scopes', message: 'Unknown scope', allowedValues: API_KEY_SCOPES },
      ]);
    }
    const apiKey = generateApiKey();
    const record: ApiKeyRecord = {
      keyId: newApiKeyId(),
      keyHash: hashApiKey(apiKey),
      workspaceId: input.workspaceId,
      role: input.role,
      scopes,
      keyPrefix: apiKey.slice(0, API_KEY_DISPLAY_PREFIX_LENGTH),
      createdAt: (input.now ?? new Date()).toISOString(),
    };
    const committed = await transact(this.table, [
      {
        Put: {
          TableName: this.table.tableName,
          Item: {
            PK: apiKeyPk(record.keyHash),
            SK: API_KEY_SK,
            keyId: record.keyId,
            workspaceId: record.workspaceId,
            role: record.role,
            scopes: record.scopes,
            keyPrefix: record.keyPrefix,
            createdAt: record.createdAt,
          },
          ConditionExpression: 'attribute_not_exists(PK)',
        },
      },
      {
        Put: {
          TableName: this.table.tableName,
          Item: {
            PK: workspacePk(record.workspaceId),
            SK: apiKeyIndexSk(record.keyId),
            keyHash: record.keyHash,
          },
          ConditionExpression: 'attribute_not_exists(PK)',
        },
      },
    ]);
    // 190 random bits and 96 for the id: a collision means a broken random source, not bad luck.
    if (committed !== true) throw new Error('A new API key collided with an existing one');
    return { apiKey, record };
  }

  /**
   * Finds the record of a usable key. A key of the wrong shape or with a wrong checksum returns `undefined`
   * without reading the database; otherwise one GetItem by the key's hash. A revoked key, or an item
   * without a public id, is `undefined` too.
   */
  async findApiKey(apiKey: string): Promise<ApiKeyRecord | undefined> {
    const parsed = parseApiKey(apiKey);
    if (!parsed.ok) return undefined;
    const keyHash = hashApiKey(parsed.apiKey);
    const result = await withDynamoErrors(() =>
      this.table.client.send(
        new GetCommand({ TableName: this.table.tableName, Key: { PK: apiKeyPk(keyHash), SK: API_KEY_SK } }),
      ),
    );
    const record = toApiKeyRecord(keyHash, result.Item);
    return record?.revokedAt === undefined ? record : undefined;
  }

  /**
   * Every key of a workspace, revoked ones included, oldest first: public id, role, scopes, creation, last
   * use, revocation. Never the key, nor its hash. One Query of the workspace's pointers, then BatchGetItem
   * of the key items (100 a call).
   */
  async listApiKeys(workspaceId: string): Promise<ApiKeySummary[]> {
    if (!isKeySafeId(workspaceId)) return [];
    const hashes: string[] = [];
    try {
      const pages = paginateQuery(
        { client: this.table.client },
        {
          TableName: this.table.tableName,
          KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
          ExpressionAttributeValues: { ':pk': workspacePk(workspaceId), ':prefix': API_KEY_INDEX_SK_PREFIX },
          ConsistentRead: true,
        },
      );
      for await (const page of pages) {
        for (const item of page.Items ?? []) if (typeof item.keyHash === 'string') hashes.push(item.keyHash);
      }
    } catch (error) {
      mapDynamoError(error);
    }

    const records: ApiKeyRecord[] = [];
    for (let start = 0; start < hashes.length; start += BATCH_GET_SIZE) {
      for (const item of await this.batchGetKeyItems(hashes.slice(start, start + BATCH_GET_SIZE))) {
        const keyHash = String(item.PK).slice(apiKeyPk('').length);
        const record = toApiKeyRecord(keyHash, item);
        if (record?.workspaceId === workspaceId) records.push(record);
      }
    }
    return records
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.keyId.localeCompare(b.keyId))
      .map(toSummary);
  }

  /**
   * Revokes a key of a workspace by its public id: sets `revokedAt` (kept when already revoked), after which
   * neither the authorizer nor the API accepts the key. Returns the revoked key, or `undefined` when the
   * workspace has no such key. 1. read the workspace's pointer; 2. update the key item, conditional on it
   * belonging to the workspace.
   */
  async revokeApiKey(
    workspaceId: string,
    keyId: string,
    now: Date = new Date(),
  ): Promise<ApiKeySummary | undefined> {
    if (!isKeySafeId(workspaceId) || !isApiKeyId(keyId)) return undefined;
    const pointer = await withDynamoErrors(() =>
      this.table.client.send(
        new GetCommand({
          TableName: this.table.tableName,
          Key: { PK: workspacePk(workspaceId), SK: apiKeyIndexSk(keyId) },
          ConsistentRead: true,
        }),
      ),
    );
    const keyHash = pointer.Item?.keyHash;
    if (typeof keyHash !== 'string') return undefined;
    try {
      const result = await withDynamoErrors(() =>
        this.table.client.send(
          new UpdateCommand({
            TableName: this.table.tableName,
            Key: { PK: apiKeyPk(keyHash), SK: API_KEY_SK },
            UpdateExpression: 'SET revokedAt = if_not_exists(revokedAt, :now)',
            ConditionExpression: 'attribute_exists(PK) AND workspaceId = :ws AND keyId = :keyId',
            ExpressionAttributeValues: { ':now': now.toISOString(), ':ws': workspaceId, ':keyId': keyId },
            ReturnValues: 'ALL_NEW',
          }),
        ),
      );
      const record = toApiKeyRecord(keyHash, result.Attributes);
      return record === undefined ? undefined : toSummary(record);
    } catch (error) {
      if (isConditionFailed(error)) return undefined;
      throw error;
    }
  }

  /**
   * Gives every key created before keys had public ids (a key item without `keyId`) its id and its
   * workspace pointer, so it authenticates again and can be listed and revoked. For a deployment upgraded
   * from such a version: `sluice keys upgrade` once, after the deploy. Idempotent: a key that has an id is
   * left alone, and two upgrades at once give a key one id (the update is conditional on it having none).
   * Scans the control table once. Returns how many keys it upgraded.
   */
  async upgradeKeysWithoutId(now: Date = new Date()): Promise<number> {
    const items: Record<string, unknown>[] = [];
    try {
      const pages = paginateScan(
        { client: this.table.client },
        {
          TableName: this.table.tableName,
          FilterExpression: 'SK = :sk AND attribute_not_exists(keyId)',
          ExpressionAttributeValues: { ':sk': API_KEY_SK },
          ConsistentRead: true,
        },
      );
      for await (const page of pages) items.push(...(page.Items ?? []));
    } catch (error) {
      mapDynamoError(error);
    }
    let upgraded = 0;
    for (const item of items) {
      if (typeof item.workspaceId !== 'string' || !isApiKeyRole(item.role)) continue;
      const keyHash = String(item.PK).slice(apiKeyPk('').length);
      const keyId = newApiKeyId();
      const committed = await transact(this.table, [
        {
          Update: {
            TableName: this.table.tableName,
            Key: { PK: apiKeyPk(keyHash), SK: API_KEY_SK },
            UpdateExpression: 'SET keyId = :keyId, createdAt = if_not_exists(createdAt, :now)',
            ConditionExpression: 'attribute_exists(PK) AND attribute_not_exists(keyId)',
            ExpressionAttributeValues: { ':keyId': keyId, ':now': now.toISOString() },
          },
        },
        {
          Put: {
            TableName: this.table.tableName,
            Item: { PK: workspacePk(item.workspaceId), SK: apiKeyIndexSk(keyId), keyHash },
            ConditionExpression: 'attribute_not_exists(PK)',
          },
        },
      ]);
      if (committed === true) upgraded++;
    }
    return upgraded;
  }

  /** The key items of some hashes, retrying unprocessed keys with backoff. */
  private async batchGetKeyItems(hashes: readonly string[]): Promise<Record<string, unknown>[]> {
    const items: Record<string, unknown>[] = [];
    let keys: Record<string, unknown>[] = hashes.map((hash) => ({ PK: apiKeyPk(hash), SK: API_KEY_SK }));
    if (keys.length === 0) return items;
    const outcome = await retrying(BATCH_RETRY, async () => {
      const result = await withDynamoErrors(() =>
        this.table.client.send(
          new BatchGetCommand({
            RequestItems: { [this.table.tableName]: { Keys: keys, ConsistentRead: true } },
          }),
        ),
      );
      items.push(...(result.Responses?.[this.table.tableName] ?? []));
      keys = result.UnprocessedKeys?.[this.table.tableName]?.Keys ?? [];
      return keys.length > 0 ? RETRY : undefined;
    });
    if (outcome === RETRY)
      throw new DatabaseUnavailableError(new Error('BatchGetItem left keys unprocessed'));
    return items;
  }
}
