import { DatabaseUnavailableError, KmsUnavailableError, SecretRejectedError } from '@sluice/core';
import { BucketError, PERMANENT_BUCKET_ERROR_NAMES, TRANSIENT_BUCKET_ERROR_NAMES } from '@sluice/sinks';
import { describe, expect, it } from 'vitest';
import {
  classifyEngineError,
  describeFailure,
  PERMANENT_ERROR_NAMES,
  TRANSIENT_ERROR_NAMES,
} from './errors.js';

describe('error classification', () => {
  it('includes every bucket error name, each in exactly one list', () => {
    for (const name of PERMANENT_BUCKET_ERROR_NAMES) expect(PERMANENT_ERROR_NAMES).toContain(name);
    for (const name of TRANSIENT_BUCKET_ERROR_NAMES) expect(TRANSIENT_ERROR_NAMES).toContain(name);
    expect(PERMANENT_ERROR_NAMES.filter((name) => TRANSIENT_ERROR_NAMES.includes(name))).toEqual([]);
    expect(TRANSIENT_ERROR_NAMES).toContain('Lambda.TooManyRequestsException');
  });

  it('gives every failure a classified name', () => {
    const bucket = new BucketError({ kind: 'permanent', reason: 'access_denied', message: 'Access denied.' });
    expect(classifyEngineError(bucket)).toBe(bucket);
    // The domain errors of the key service and the database pass as they are: their names are in the lists.
    for (const domain of [
      new SecretRejectedError(),
      new KmsUnavailableError(),
      new DatabaseUnavailableError(),
    ]) {
      expect(classifyEngineError(domain)).toBe(domain);
    }
    expect(PERMANENT_ERROR_NAMES).toContain('SecretRejectedError');
    expect(TRANSIENT_ERROR_NAMES).toEqual(
      expect.arrayContaining(['KmsUnavailableError', 'DatabaseUnavailableError']),
    );
    const throttled = Object.assign(new Error('slow down'), {
      name: 'ProvisionedThroughputExceededException',
    });
    expect(classifyEngineError(throttled).name).toBe('DatabaseUnavailableError');
    expect(classifyEngineError(new TypeError('x is undefined')).name).toBe('UnexpectedExportError');
    for (const error of [new SecretRejectedError(), new TypeError('boom')]) {
      const name = classifyEngineError(error).name;
      expect([...PERMANENT_ERROR_NAMES, ...TRANSIENT_ERROR_NAMES]).toContain(name);
    }
  });

  it('describes a caught failure with the classified message only, never a stack or raw text', () => {
    const cause = (errorType: string, errorMessage: string) =>
      JSON.stringify({ errorType, errorMessage, trace: ['Error: at handler (/var/task/index.js:1:1)'] });
    expect(
      describeFailure({
        Error: 'BucketAccessDenied',
        Cause: cause('BucketAccessDenied', 'Access denied writing to "b".'),
      }),
    ).toBe('Access denied writing to "b".');
    const internal = describeFailure({
      Error: 'TypeError',
      Cause: cause('TypeError', 'secret=abc is not a function'),
    });
    expect(internal).toBe('An internal error interrupted the export (TypeError). Sluice will retry.');
    expect(internal).not.toContain('abc');
    expect(describeFailure({ Error: 'States.Timeout', Cause: 'Task timed out' })).toMatch(/did not finish/);
    expect(describeFailure(undefined)).toMatch(/internal error/);
    expect(
      describeFailure({ Error: 'BucketNotFound', Cause: cause('BucketNotFound', 'x'.repeat(2000)) }).length,
    ).toBe(500);
  });
});
