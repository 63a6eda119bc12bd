import {
  API_KEY_ROLES,
  API_KEY_SCOPES,
  type ApiKeyScope,
  type ApiKeySummary,
  ControlStore,
  isApiKeyId,
  isApiKeyRole,
  isApiKeyScope,
  isKeySafeId,
} from '@sluice/control';
import { isWorkspaceId, WORKSPACE_ID_RULE } from '@sluice/core';
import { loadRuntimeConfig } from '@sluice/local/runtime-config';
import { Command } from 'commander';
import { UsageError } from '../context.js';
import { commandGroup } from './command.js';
import { operatorTables } from './tables.js';

/** What the `keys` commands need, injectable for tests. */
export interface KeysCommandDeps {
  /** @default a `ControlStore` on the runtime configuration (read when the command runs) */
  store?: () => Pick<
    ControlStore,
    'ensureWorkspace' | 'createApiKey' | 'listApiKeys' | 'revokeApiKey' | 'upgradeKeysWithoutId'
  >;
  /** @default a line on stdout */
  out?: (line: string) => void;
}

/** `--workspace <id>`, required and usable as a key. */
function workspaceOption(value: string | undefined): string {
  if (value === undefined || value === '') throw new UsageError('--workspace <id> is required');
  if (!isKeySafeId(value)) {
    throw new UsageError('--workspace must be 1-200 characters without "#" or control characters');
  }
  return value;
}

/** One key as a line of `keys list`: id, role, state, dates, scopes. */
function keyLine(key: ApiKeySummary): string {
  const state = key.revokedAt ? `revoked ${key.revokedAt}` : 'active';
  return [
    key.keyId,
    key.role.padEnd(6),
    `${key.keyPrefix}…`,
    state,
    `created ${key.createdAt}`,
    `last used ${key.lastUsedAt ?? 'never'}`,
    key.scopes.join(','),
  ].join('  ');
}

/** Parses `--scopes a,b`: known scopes only, at least one, duplicates dropped. */
function parseScopes(value: string): ApiKeyScope[] {
  const scopes = [
    ...new Set(
      value
        .split(',')
        .map((scope) => scope.trim())
        .filter(Boolean),
    ),
  ];
  if (scopes.length === 0)
    throw new UsageError(`--scopes needs at least one of: ${API_KEY_SCOPES.join(', ')}`);
  const unknown = scopes.filter((scope) => !isApiKeyScope(scope));
  if (unknown.length > 0) {
    throw new UsageError(`Unknown scope(s): ${unknown.join(', ')}. Allowed: ${API_KEY_SCOPES.join(', ')}`);
  }
  return scopes as ApiKeyScope[];
}

/**
 * The `keys` commands, on the control table directly (operators, not customers).
 *
 * `keys create`: 1. validate `--workspace`, `--role` and `--scopes` (default: every scope); 2. ensure the
 * workspace exists; 3. create the key; 4. print it, once (with `--json`, exactly
 * `{"apiKey": "...", "keyId": "...", "workspaceId": "..."}`).
 *
 * `keys list`: every key of the workspace, revoked ones included: public id, role, display prefix, state,
 * creation, last use, scopes (with `--json`, `{"workspaceId": "...", "keys": [...]}`). Never the key.
 *
 * `keys revoke`: revokes one key by its public id; the API refuses it from its next request.
 *
 * `keys upgrade`: gives the keys created before keys had public ids their id (they authenticate again);
 * run once after upgrading a deployment from such a version. Idempotent.
 */
export function createKeysCommands(deps: KeysCommandDeps = {}): Command[] {
  const out = deps.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const store = deps.store ?? (() => new ControlStore(operatorTables(loadRuntimeConfig()).control));
  const create = new Command('create')
    .description('create an API key (shown once)')
    .option('--workspace <id>', 'the workspace (created when missing)')
    .option('--role <role>', `one of ${API_KEY_ROLES.join(', ')}`)
    .option('--scopes <a,b>', 'the scopes (default: every scope)')
    .option('--json', 'print {"apiKey", "keyId", "workspaceId"}')
    .action(async (values: { workspace?: string; role?: string; scopes?: string; json?: boolean }) => {
      const workspaceId = workspaceOption(values.workspace);
      if (!isWorkspaceId(workspaceId)) throw new UsageError(`--workspace must be ${WORKSPACE_ID_RULE}`);
      if (values.role === undefined) {
        throw new UsageError(`--role is required: one of ${API_KEY_ROLES.join(', ')}`);
      }
      if (!isApiKeyRole(values.role)) {
        throw new UsageError(`Unknown role "${values.role}". Allowed: ${API_KEY_ROLES.join(', ')}`);
      }
      const role = values.role;
      const scopes = values.scopes === undefined ? undefined : parseScopes(values.scopes);

      const control = store();
      await control.ensureWorkspace(workspaceId);
      const { apiKey, record } = await control.createApiKey({ workspaceId, role, scopes });

      if (values.json) {
        out(JSON.stringify({ apiKey, keyId: record.keyId, workspaceId }));
        return;
      }
      out(`Created a ${role} API key ${record.keyId} for workspace ${workspaceId}.`);
      out(`Scopes: ${record.scopes.join(', ')}`);
      out('Store it now: it is shown only once.');
      out('');
      out(`  ${apiKey}`);
    });

  const list = new Command('list')
    .description("list a workspace's keys, revoked ones included (never the key)")
    .option('--workspace <id>', 'the workspace')
    .option('--json', 'print {"workspaceId", "keys": [...]}')
    .action(async (values: { workspace?: string; json?: boolean }) => {
      const workspaceId = workspaceOption(values.workspace);
      const keys = await store().listApiKeys(workspaceId);
      if (values.json) {
        out(JSON.stringify({ workspaceId, keys }));
        return;
      }
      if (keys.length === 0) {
        out(`Workspace ${workspaceId} has no API keys.`);
        return;
      }
      for (const key of keys) out(keyLine(key));
    });

  const revoke = new Command('revoke')
    .description('revoke a key by its id; the API refuses it from its next request')
    .option('--workspace <id>', 'the workspace')
    .argument('[keyId]', 'the key id (keys list shows them)')
    .action(async (keyId: string | undefined, values: { workspace?: string }) => {
      const workspaceId = workspaceOption(values.workspace);
      if (keyId === undefined) throw new UsageError('Give the key id to revoke (keys list shows them)');
      if (!isApiKeyId(keyId))
        throw new UsageError(`"${keyId}" is not a key id like key_0123456789abcdef01234567`);
      const revoked = await store().revokeApiKey(workspaceId, keyId);
      if (revoked === undefined) throw new Error(`Workspace ${workspaceId} has no API key ${keyId}`);
      out(`Revoked ${keyId} (${revoked.role}) of workspace ${workspaceId} at ${revoked.revokedAt}.`);
      out('The API refuses it from its next request.');
    });

  const upgrade = new Command('upgrade')
    .description('give the keys created before keys had ids their id (once, after an upgrade)')
    .action(async () => {
      const upgraded = await store().upgradeKeysWithoutId();
      out(
        upgraded === 0
          ? 'Every API key already has a key id.'
          : `Gave ${upgraded} API key(s) without a key id their id: they authenticate again (keys list shows them).`,
      );
    });

  return [commandGroup('keys', [create, list, revoke, upgrade])];
}
