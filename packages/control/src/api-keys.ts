import { createHash, randomBytes } from 'node:crypto';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { InvalidInputError } from '@sluice/core';
import {
  type ControlTable,
  type ControlTableOptions,
  resolveControlTable,
  withDynamoErrors,
} from './client.js';
import { API_KEY_SK, apiKeyPk, isKeySafeId } from './items.js';

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

/** An API key as stored: never the key itself, only its SHA-256. */
export interface ApiKeyRecord {
  /** SHA-256 hex of the key. */
  keyHash: string;
  workspaceId: string;
  role: ApiKeyRole;
  scopes: ApiKeyScope[];
  /** The first 8 characters of the key, for display. */
  keyPrefix: string;
  createdAt: string;
}

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

/** What a new key is for. */
export interface CreateApiKeyInput {
  workspaceId: string;
  role: ApiKeyRole;
  /** @default every scope in {@link API_KEY_SCOPES} */
  scopes?: readonly ApiKeyScope[];
  /** @default now */
  now?: Date;
}

/** Creates and looks up API keys in the control table (`PK = KEY#<sha256>`, `SK = KEY`). */
export class ApiKeyStore {
  private readonly table: ControlTable;

  constructor(options: ControlTableOptions) {
    this.table = resolveControlTable(options);
  }

  /**
   * Creates a key for a workspace. Returns the key, which is shown once and never stored, and its record.
   * 1. validate workspace id, role and scopes; 2. generate the key; 3. put its hash, refusing a collision.
   */
  async createApiKey(input: CreateApiKeyInput): Promise<{ apiKey: string; record: ApiKeyRecord }> {
    if (!isKeySafeId(input.workspaceId)) {
      throw new InvalidInputError('Workspace id is not valid.', [
        { path: 'workspaceId', message: 'Invalid id' },
      ]);
    }
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
      keyHash: hashApiKey(apiKey),
      workspaceId: input.workspaceId,
      role: input.role,
      scopes,
      keyPrefix: apiKey.slice(0, API_KEY_DISPLAY_PREFIX_LENGTH),
      createdAt: (input.now ?? new Date()).toISOString(),
    };
    await withDynamoErrors(() =>
      this.table.client.send(
        new PutCommand({
          TableName: this.table.tableName,
          Item: {
            PK: apiKeyPk(record.keyHash),
            SK: API_KEY_SK,
            workspaceId: record.workspaceId,
            role: record.role,
            scopes: record.scopes,
            keyPrefix: record.keyPrefix,
            createdAt: record.createdAt,
          },
          ConditionExpression: 'attribute_not_exists(PK)',
        }),
      ),
    );
    return { apiKey, record };
  }

  /**
   * Finds the record of a key. A key of the wrong shape or with a wrong checksum returns `undefined`
   * without reading the database; otherwise one GetItem by the key's hash.
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
    const item = result.Item;
    if (item === undefined || typeof item.workspaceId !== 'string' || !isApiKeyRole(item.role))
      return undefined;
    const scopes = Array.isArray(item.scopes) ? item.scopes.filter(isApiKeyScope) : [];
    return {
      keyHash,
      workspaceId: item.workspaceId,
      role: item.role,
      scopes,
      keyPrefix: String(item.keyPrefix ?? ''),
      createdAt: String(item.createdAt ?? ''),
    };
  }
}
