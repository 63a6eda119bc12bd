import { randomUUID } from 'node:crypto';
import { KMSClient } from '@aws-sdk/client-kms';
import { SecretRejectedError } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { CachedSecretOpener, SECRET_CACHE_TTL_MS } from './cache.js';
import { SecretSealer } from './sealer.js';
import { kmsKey } from '../../../test/helpers/tables.js';

/** A sealer on the local KMS whose `Decrypt` calls are counted. */
function countingSealer(): { sealer: SecretSealer; decrypts: () => number } {
  let decrypts = 0;
  const client = new KMSClient({});
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'DecryptCommand') decrypts++;
      return next(args);
    },
    { step: 'initialize' },
  );
  return { sealer: new SecretSealer({ ...kmsKey, client }), decrypts: () => decrypts };
}

function context(): { workspaceId: string; destinationId: string } {
  return { workspaceId: `ws_${randomUUID()}`, destinationId: `exp_${randomUUID()}` };
}

describe('CachedSecretOpener (a warm writer, the local KMS)', () => {
  it('decrypts a destination secret once per configuration version while fresh, again after the TTL', async () => {
    // Prepare
    const { sealer, decrypts } = countingSealer();
    let now = 1_000_000;
    const cache = new CachedSecretOpener(sealer, { now: () => now });
    const ctx = context();
    const sealed = await sealer.seal('secret-one', ctx);

    // Act: ten invocations of the same version
    const opened: string[] = [];
    for (let i = 0; i < 10; i++) opened.push(await cache.open(sealed, ctx, { configVersion: 1 }));
    const afterTen = decrypts();
    // Act: the credentials change (a new sealed secret, a new version)
    const resealed = await sealer.seal('secret-two', ctx);
    const afterChange = await cache.open(resealed, ctx, { configVersion: 2 });
    // Act: the TTL passes
    now += SECRET_CACHE_TTL_MS;
    const afterTtl = await cache.open(resealed, ctx, { configVersion: 2 });

    // Assess
    expect(new Set(opened)).toEqual(new Set(['secret-one']));
    expect(afterTen).toBe(1);
    expect(afterChange).toBe('secret-two');
    expect(afterTtl).toBe('secret-two');
    expect(decrypts()).toBe(3);
  });

  it('never serves a cached secret for another sealed value, another destination or without a version', async () => {
    // Prepare
    const { sealer, decrypts } = countingSealer();
    const cache = new CachedSecretOpener(sealer);
    const ctx = context();
    const other = context();
    const sealed = await sealer.seal('secret-one', ctx);
    const swapped = await sealer.seal('secret-swapped', ctx);
    await cache.open(sealed, ctx, { configVersion: 1 });

    // Act
    const sameVersionOtherValue = await cache.open(swapped, ctx, { configVersion: 1 });
    const otherDestination = await cache.open(sealed, other, { configVersion: 1 }).catch((e: unknown) => e);
    const unversioned = await cache.open(swapped, ctx);

    // Assess
    expect(sameVersionOtherValue).toBe('secret-swapped');
    expect(otherDestination).toBeInstanceOf(SecretRejectedError);
    expect(unversioned).toBe('secret-swapped');
    expect(decrypts()).toBe(4);
  });

  it('keeps at most maxEntries secrets', async () => {
    // Prepare
    const { sealer, decrypts } = countingSealer();
    const cache = new CachedSecretOpener(sealer, { maxEntries: 2 });
    const contexts = [context(), context(), context()];
    const sealed = await Promise.all(contexts.map((ctx) => sealer.seal('s', ctx)));

    // Act: three destinations, then the first again (evicted)
    for (const [i, ctx] of contexts.entries()) await cache.open(sealed[i]!, ctx, { configVersion: 1 });
    await cache.open(sealed[0]!, contexts[0]!, { configVersion: 1 });
    await cache.open(sealed[2]!, contexts[2]!, { configVersion: 1 });

    // Assess
    expect(decrypts()).toBe(4);
  });
});
