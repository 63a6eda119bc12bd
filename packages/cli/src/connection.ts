import { LOCAL_JSON, type LocalJson, readJsonFile } from '@sluice/local/runtime-config';

/** Where the CLI sends its requests: the API's base URL (ending in `/v1` or `/api/v1`) and a key. */
export interface Connection {
  apiUrl: string;
  apiKey: string;
  /** Where they came from, for error messages. */
  source: 'options' | 'environment' | 'npm start';
}

/** Thrown when there is no API to talk to; the message says what to do. */
export class ConnectionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConnectionError';
  }
}

/** The connection options a command was given. */
export interface ConnectionOptions {
  apiUrl?: string;
  apiKey?: string;
}

/**
 * Resolves the API to talk to:
 * 1. `--api-url` / `--api-key`, each falling back to `SLUICE_API_URL` / `SLUICE_API_KEY`;
 * 2. when neither a URL nor a key is given at all, the `.sluice/local.json` that `npm start` writes;
 * 3. otherwise a {@link ConnectionError} naming what is missing.
 * A URL without a path (`https://api.example.com`) gets `/api/v1` appended.
 */
export function resolveConnection(
  options: ConnectionOptions,
  env: NodeJS.ProcessEnv = process.env,
  localJsonFile: string = LOCAL_JSON,
): Connection {
  const apiUrl = options.apiUrl ?? env.SLUICE_API_URL;
  const apiKey = options.apiKey ?? env.SLUICE_API_KEY;
  if (apiUrl === undefined && apiKey === undefined) {
    const local = readJsonFile<LocalJson>(localJsonFile);
    if (!local || typeof local.apiUrl !== 'string' || typeof local.apiKey !== 'string') {
      throw new ConnectionError(
        'No API to talk to: pass --api-url and --api-key, set SLUICE_API_URL and SLUICE_API_KEY, or run ' +
          '`npm start` in another terminal (it writes .sluice/local.json).',
      );
    }
    return { apiUrl: normalizeApiUrl(local.apiUrl), apiKey: local.apiKey, source: 'npm start' };
  }
  if (!apiUrl)
    throw new ConnectionError('An API key was given but no URL: pass --api-url or set SLUICE_API_URL.');
  if (!apiKey)
    throw new ConnectionError('An API URL was given but no key: pass --api-key or set SLUICE_API_KEY.');
  const source = options.apiUrl !== undefined || options.apiKey !== undefined ? 'options' : 'environment';
  return { apiUrl: normalizeApiUrl(apiUrl), apiKey, source };
}

/** Checks the URL and drops trailing slashes; a bare origin gets the API's `/api/v1` path. */
export function normalizeApiUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConnectionError(`Not a URL: ${raw} (expected, for example, https://api.example.com/api/v1)`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ConnectionError(`The API URL must use https (or http for a local API): ${raw}`);
  }
  const path = url.pathname.replace(/\/+$/, '');
  return `${url.origin}${path === '' ? '/api/v1' : path}`;
}
