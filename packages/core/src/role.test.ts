import { describe, expect, it } from 'vitest';
import { externalIdFor, ROLE_ARN_RE, roleSessionName } from './role.js';

describe('ROLE_ARN_RE', () => {
  it.each([
    'arn:aws:iam::111122223333:role/sluice',
    'arn:aws:iam::111122223333:role/service-role/exports/sluice-writer',
    'arn:aws-cn:iam::111122223333:role/sluice',
    'arn:aws-us-gov:iam::111122223333:role/sluice+=,.@_-',
  ])('accepts %s', (arn) => {
    expect(ROLE_ARN_RE.test(arn)).toBe(true);
  });

  it.each([
    'arn:aws:iam::111122223333:user/bob',
    'arn:aws:iam::11112222333:role/sluice',
    'arn:aws:iam:us-east-1:111122223333:role/sluice',
    'arn:aws:sts::111122223333:assumed-role/sluice/session',
    'arn:aws:iam::111122223333:role/',
    'arn:aws:iam::111122223333:role/with space',
    ' arn:aws:iam::111122223333:role/sluice',
    'sluice',
  ])('refuses %s', (arn) => {
    expect(ROLE_ARN_RE.test(arn)).toBe(false);
  });
});

describe('externalIdFor', () => {
  const key = Buffer.alloc(32, 1);

  it('is the same for the same key and workspace uid, and has the documented shape', () => {
    expect(externalIdFor(key, 'uid-a')).toBe(externalIdFor(key, 'uid-a'));
    expect(externalIdFor(key, 'uid-a')).toMatch(/^sluice-[0-9a-f]{32}$/);
  });

  it('differs for another workspace uid, and under another key', () => {
    expect(externalIdFor(key, 'uid-b')).not.toBe(externalIdFor(key, 'uid-a'));
    expect(externalIdFor(Buffer.alloc(32, 2), 'uid-a')).not.toBe(externalIdFor(key, 'uid-a'));
  });
});

describe('roleSessionName', () => {
  it('is sluice-<destination id>, within the 64 characters and the characters STS accepts', () => {
    expect(roleSessionName('exp_0123456789abcdef01234567')).toBe('sluice-exp_0123456789abcdef01234567');
    const long = roleSessionName(`exp_${'a'.repeat(64)}`);
    expect(long).toHaveLength(64);
    expect(long).toMatch(/^[\w+=,.@-]+$/);
  });
});
