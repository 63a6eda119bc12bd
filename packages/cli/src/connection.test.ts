import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConnectionError, normalizeApiUrl, resolveConnection } from './connection.js';

const dir = mkdtempSync(join(tmpdir(), 'sluice-cli-'));
const localJson = join(dir, 'local.json');
writeFileSync(
  localJson,
  JSON.stringify({ apiUrl: 'http://127.0.0.1:3000/v1', apiKey: 'sk_local', workspaceId: 'ws_local' }),
);
const missing = join(dir, 'missing.json');

describe('resolveConnection', () => {
  it('prefers the options, then the environment, each field on its own', () => {
    // Act
    const fromOptions = resolveConnection(
      { apiUrl: 'https://api.example.com/api/v1/', apiKey: 'sk_opt' },
      { SLUICE_API_URL: 'https://other.example.com/v1', SLUICE_API_KEY: 'sk_env' },
      localJson,
    );
    const mixed = resolveConnection(
      { apiKey: 'sk_opt' },
      { SLUICE_API_URL: 'https://other.example.com/v1' },
      localJson,
    );
    const fromEnv = resolveConnection(
      {},
      { SLUICE_API_URL: 'https://api.example.com', SLUICE_API_KEY: 'sk_env' },
      localJson,
    );

    // Assess
    expect(fromOptions).toEqual({
      apiUrl: 'https://api.example.com/api/v1',
      apiKey: 'sk_opt',
      source: 'options',
    });
    expect(mixed).toEqual({ apiUrl: 'https://other.example.com/v1', apiKey: 'sk_opt', source: 'options' });
    expect(fromEnv).toEqual({
      apiUrl: 'https://api.example.com/api/v1',
      apiKey: 'sk_env',
      source: 'environment',
    });
  });

  it("uses npm start's .sluice/local.json only when nothing is given", () => {
    // Act
    const local = resolveConnection({}, {}, localJson);

    // Assess
    expect(local).toEqual({ apiUrl: 'http://127.0.0.1:3000/v1', apiKey: 'sk_local', source: 'npm start' });
    expect(() => resolveConnection({ apiUrl: 'https://api.example.com/v1' }, {}, localJson)).toThrow(
      /no key: pass --api-key or set SLUICE_API_KEY/,
    );
    expect(() => resolveConnection({}, { SLUICE_API_KEY: 'sk' }, localJson)).toThrow(/no URL/);
    expect(() => resolveConnection({}, {}, missing)).toThrow(ConnectionError);
    expect(() => resolveConnection({}, {}, missing)).toThrow(/npm start/);
  });

  it('refuses what is not an http(s) URL', () => {
    expect(() => normalizeApiUrl('api.example.com')).toThrow(/Not a URL/);
    expect(() => normalizeApiUrl('ftp://api.example.com/v1')).toThrow(/https/);
    expect(normalizeApiUrl('http://127.0.0.1:3000/')).toBe('http://127.0.0.1:3000/api/v1');
  });
});
