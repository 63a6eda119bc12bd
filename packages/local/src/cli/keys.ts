import { parseArgs } from 'node:util';
import {
  API_KEY_ROLES,
  API_KEY_SCOPES,
  type ApiKeyScope,
  ControlStore,
  isApiKeyRole,
  isApiKeyScope,
  isKeySafeId,
} from '@sluice/control';
import { readCliTables } from '../runtime-config.js';
import { type CliCommand, CliUsageError } from './command.js';

/** What `keys create` needs, injectable for tests. */
export interface KeysCommandDeps {
  /** @default a `ControlStore` on the environment the dispatcher set (created when the command runs) */
  store?: () => Pick<ControlStore, 'ensureWorkspace' | 'createApiKey'>;
  /** @default a line on stdout */
  out?: (line: string) => void;
}

const USAGE = `keys create --workspace <id> --role <${API_KEY_ROLES.join('|')}> [--scopes a,b] [--json]`;

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
    throw new CliUsageError(`--scopes needs at least one of: ${API_KEY_SCOPES.join(', ')}`);
  const unknown = scopes.filter((scope) => !isApiKeyScope(scope));
  if (unknown.length > 0) {
    throw new CliUsageError(`Unknown scope(s): ${unknown.join(', ')}. Allowed: ${API_KEY_SCOPES.join(', ')}`);
  }
  return scopes as ApiKeyScope[];
}

/**
 * The `keys` commands. `keys create`:
 * 1. validate `--workspace`, `--role` and `--scopes` (default: every scope);
 * 2. ensure the workspace exists; 3. create the key; 4. print it, once (with `--json`,
 *    exactly `{"apiKey": "...", "workspaceId": "..."}`).
 */
export function createKeysCommands(deps: KeysCommandDeps = {}): CliCommand[] {
  const out = deps.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const store = deps.store ?? (() => new ControlStore(readCliTables().control));
  return [
    {
      name: 'keys create',
      usage: USAGE,
      async run(args: string[]): Promise<void> {
        const { values, positionals } = parseArgs({
          args,
          options: {
            workspace: { type: 'string' },
            role: { type: 'string' },
            scopes: { type: 'string' },
            json: { type: 'boolean', default: false },
          },
          allowPositionals: true,
          strict: true,
        });
        if (positionals.length > 0) throw new CliUsageError(`Unexpected argument: ${positionals.join(' ')}`);
        const workspaceId = values.workspace;
        if (workspaceId === undefined || workspaceId === '')
          throw new CliUsageError('--workspace <id> is required');
        if (!isKeySafeId(workspaceId)) {
          throw new CliUsageError('--workspace must be 1-200 characters without "#" or control characters');
        }
        if (values.role === undefined) {
          throw new CliUsageError(`--role is required: one of ${API_KEY_ROLES.join(', ')}`);
        }
        if (!isApiKeyRole(values.role)) {
          throw new CliUsageError(`Unknown role "${values.role}". Allowed: ${API_KEY_ROLES.join(', ')}`);
        }
        const role = values.role;
        const scopes = values.scopes === undefined ? undefined : parseScopes(values.scopes);

        const control = store();
        await control.ensureWorkspace(workspaceId);
        const { apiKey, record } = await control.createApiKey({ workspaceId, role, scopes });

        if (values.json) {
          out(JSON.stringify({ apiKey, workspaceId }));
          return;
        }
        out(`Created a ${role} API key for workspace ${workspaceId}.`);
        out(`Scopes: ${record.scopes.join(', ')}`);
        out('Store it now: it is shown only once.');
        out('');
        out(`  ${apiKey}`);
      },
    },
  ];
}

/** The `keys` commands of the `npm run sluice` CLI. */
export const commands: CliCommand[] = createKeysCommands();
