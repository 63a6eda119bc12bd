import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { REPO_ROOT } from '@sluice/devstack';

/** The state folder of `npm start`: `.sluice/` under the repository root. */
export const STATE_DIR = join(REPO_ROOT, '.sluice');
/** What a user of `npm start` needs: API URL, key, local bucket. */
export const LOCAL_JSON = join(STATE_DIR, 'local.json');
/** The internal environment of a running `npm start`, for the CLI. */
export const RUNTIME_JSON = join(STATE_DIR, 'runtime.json');

/** `.sluice/local.json`, exactly as documented in docs/local.md. */
export interface LocalJson {
  apiUrl: string;
  apiKey: string;
  workspaceId: string;
  s3: { endpoint: string; region: string; bucket: string; accessKeyId: string; secretAccessKey: string };
}

/** `.sluice/runtime.json`: the environment (endpoints, table names) of a running `npm start`. */
export interface RuntimeJson {
  /** The `npm start` process; the file is stale once it is gone. */
  pid: number;
  startedAt: string;
  dataDir: string;
  env: Record<string, string>;
}

/** Writes a JSON file atomically (temp file, then rename), readable by its owner only. */
export async function writeJsonFile(file: string, value: unknown): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const temp = `${file}.${process.pid}.tmp`;
  await writeFile(temp, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
  await rename(temp, file);
}

/** Reads a JSON file, or undefined when it is missing or not JSON. */
export function readJsonFile<T>(file: string): T | undefined {
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

/** True when a process with that id exists. */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes `.sluice/runtime.json` if it still belongs to this process. */
export async function removeRuntimeJson(file = RUNTIME_JSON): Promise<void> {
  const current = readJsonFile<RuntimeJson>(file);
  if (current?.pid === process.pid) await rm(file, { force: true });
}

/** Where the CLI's configuration came from. */
export type RuntimeSource = 'environment' | 'npm start';

/**
 * Makes `process.env` point at the Sluice to operate on, for the CLI:
 * - `SLUICE_CONTROL_TABLE` already set: the environment describes a deployed stack; use it as it is;
 * - else a `.sluice/runtime.json` of a running `npm start`: copy its variables into `process.env`;
 * - else throw an error that says what to do.
 * The commands then read their tables from it with {@link readCliTables}.
 */
export function loadRuntimeConfig(
  env: NodeJS.ProcessEnv = process.env,
  file: string = RUNTIME_JSON,
): RuntimeSource {
  if (env.SLUICE_CONTROL_TABLE) return 'environment';
  const runtime = readJsonFile<RuntimeJson>(file);
  if (!runtime || typeof runtime.env !== 'object' || runtime.env === null) {
    throw new Error(
      'No Sluice to talk to: run `npm start` in another terminal, or set SLUICE_CONTROL_TABLE (and the other ' +
        'SLUICE_* variables of docs/internals.md) for a deployed stack.',
    );
  }
  if (!isProcessAlive(runtime.pid)) {
    throw new Error(
      `${file} belongs to an \`npm start\` (pid ${runtime.pid}) that is no longer running: start it again.`,
    );
  }
  for (const [name, value] of Object.entries(runtime.env)) env[name] = value;
  return 'npm start';
}

const tableVariable = z.string({ error: 'is not set' }).min(1, { error: 'is not set' });
const cliEnvironment = z.object({
  SLUICE_CONTROL_TABLE: tableVariable,
  SLUICE_EVENTS_TABLE: tableVariable,
  SLUICE_SUBSCRIBERS_TABLE: tableVariable,
});

/** The tables the CLI's commands work on, as store options. */
export interface CliTables {
  control: { tableName: string };
  events: { eventsTable: string; subscribersTable: string };
}

/**
 * Reads the CLI's tables from its environment (after {@link loadRuntimeConfig}): the stores take them in
 * their constructors. Throws naming each variable that is not set.
 */
export function readCliTables(env: Readonly<Record<string, string | undefined>> = process.env): CliTables {
  const result = cliEnvironment.safeParse(env);
  if (!result.success) {
    throw new Error(
      result.error.issues.map((issue) => `${String(issue.path[0])} ${issue.message}`).join('; '),
    );
  }
  const vars = result.data;
  return {
    control: { tableName: vars.SLUICE_CONTROL_TABLE },
    events: { eventsTable: vars.SLUICE_EVENTS_TABLE, subscribersTable: vars.SLUICE_SUBSCRIBERS_TABLE },
  };
}
