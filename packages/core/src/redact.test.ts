import { describe, expect, it } from 'vitest';
import { REDACTED, redactSecrets } from './redact.js';

describe('redactSecrets', () => {
  it('masks secret fields by name, whatever their case or separators', () => {
    const logged = JSON.parse(
      JSON.stringify(
        { secretAccessKey: 'wJalr', nested: { Authorization: 'Bearer x', api_key: 'k' }, bucket: 'acme' },
        redactSecrets,
      ),
    );

    expect(logged).toEqual({
      secretAccessKey: REDACTED,
      nested: { Authorization: REDACTED, api_key: REDACTED },
      bucket: 'acme',
    });
  });

  it('masks an API key inside any string', () => {
    const line = JSON.stringify(
      { message: 'key slk_3IdmV3G1RMwbEY3vcImvWnP3KgA7Zihl3rxheR failed' },
      redactSecrets,
    );

    expect(line).not.toContain('slk_3Idm');
    expect(line).toContain(REDACTED);
  });
});
