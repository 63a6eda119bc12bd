import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { KMSClient } from '@aws-sdk/client-kms';
import { KmsUnavailableError, SecretRejectedError } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { SecretSealer } from './sealer.js';
import { kmsKey } from '../../../test/helpers/tables.js';

const secret = `wJalrXUtnFEMI/K7MDENG/bPxRfiCY${randomUUID()}`;

function context(): { workspaceId: string; destinationId: string } {
  return { workspaceId: `ws_${randomUUID()}`, destinationId: `exp_${randomUUID()}` };
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

describe('SecretSealer against the local KMS', () => {
  const sealer = new SecretSealer(kmsKey);

  it('opens what it sealed, for the same destination', async () => {
    const ctx = context();

    const sealed = await sealer.seal(secret, ctx);
    const opened = await sealer.open(sealed, ctx);

    expect(opened).toBe(secret);
    expect(Buffer.from(sealed.iv, 'base64')).toHaveLength(12);
    expect(Buffer.from(sealed.tag, 'base64')).toHaveLength(16);
  });

  it('never puts the secret in the sealed record, and seals the same secret differently each time', async () => {
    const ctx = context();

    const first = await sealer.seal(secret, ctx);
    const second = await sealer.seal(secret, ctx);

    const text = JSON.stringify(first);
    expect(text).not.toContain(secret);
    expect(text).not.toContain(Buffer.from(secret).toString('base64'));
    expect(text).not.toContain(Buffer.from(secret).toString('hex'));
    expect(second.ciphertext).not.toBe(first.ciphertext);
    expect(second.encryptedDataKey).not.toBe(first.encryptedDataKey);
  });

  it('refuses a sealed secret copied onto another destination or workspace, without the secret in the error', async () => {
    const ctx = context();
    const sealed = await sealer.seal(secret, ctx);

    const otherDestination = await sealer
      .open(sealed, { ...ctx, destinationId: `exp_${randomUUID()}` })
      .catch((error: unknown) => error);
    const otherWorkspace = await sealer
      .open(sealed, { ...ctx, workspaceId: `ws_${randomUUID()}` })
      .catch((error: unknown) => error);

    for (const failure of [otherDestination, otherWorkspace]) {
      expect(failure).toBeInstanceOf(SecretRejectedError);
      expect((failure as SecretRejectedError).retryable).toBe(false);
      expect(String((failure as Error).message)).not.toContain(secret);
      expect(JSON.stringify(failure)).not.toContain(secret);
    }
  });

  it('refuses a tampered ciphertext or tag', async () => {
    const ctx = context();
    const sealed = await sealer.seal(secret, ctx);
    const flipped = Buffer.from(sealed.ciphertext, 'base64');
    flipped[0] = (flipped[0] ?? 0) ^ 1;

    await expect(
      sealer.open({ ...sealed, ciphertext: flipped.toString('base64') }, ctx),
    ).rejects.toBeInstanceOf(SecretRejectedError);
    await expect(sealer.open({ ...sealed, tag: sealed.iv }, ctx)).rejects.toBeInstanceOf(SecretRejectedError);
  });

  it('zeroes the plaintext data key after sealing', async () => {
    const real = new KMSClient({});
    const keys: Uint8Array[] = [];
    const spy = {
      send: async (command: Parameters<KMSClient['send']>[0]) => {
        const output = (await real.send(command)) as { Plaintext?: Uint8Array };
        if (output.Plaintext) keys.push(output.Plaintext);
        return output;
      },
    } as unknown as KMSClient;
    const ctx = context();

    const sealed = await new SecretSealer({ client: spy, ...kmsKey }).seal(secret, ctx);

    expect(keys).toHaveLength(1);
    expect(keys[0]?.every((byte) => byte === 0)).toBe(true);
    expect(await sealer.open(sealed, ctx)).toBe(secret);
  });

  it('maps an unreachable KMS to a retryable KmsUnavailableError, on seal and on open', async () => {
    const ctx = context();
    const sealed = await sealer.seal(secret, ctx);
    const port = await closedPort();
    const down = new SecretSealer({
      client: new KMSClient({ endpoint: `http://127.0.0.1:${port}`, maxAttempts: 1 }),
      ...kmsKey,
    });

    await expect(down.seal(secret, ctx)).rejects.toBeInstanceOf(KmsUnavailableError);
    const failure = await down.open(sealed, ctx).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(KmsUnavailableError);
    expect((failure as KmsUnavailableError).retryable).toBe(true);
  });
});
