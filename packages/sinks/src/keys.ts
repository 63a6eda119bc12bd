import { withPrefix } from '@sluice/core';

/** The connection test's object, relative to the path prefix. */
export const CONNECTION_TEST_KEY = '_sluice/connection-test.json';

/** `<prefix>/_sluice/connection-test.json`, or `_sluice/connection-test.json` for the bucket root. */
export function connectionTestKey(pathPrefix: string): string {
  return withPrefix(pathPrefix, CONNECTION_TEST_KEY);
}
