import { randomBytes } from 'node:crypto';
import { externalIdFor } from '@sluice/core';
import type { ApiSealer, ApiStore } from './ports.js';

/**
 * The KMS encryption context of Sluice's external-ID key: it belongs to no workspace, so none of a
 * destination's context can open it.
 */
export const EXTERNAL_ID_KEY_CONTEXT = { workspaceId: 'sluice', destinationId: 'external-id-key' } as const;

/**
 * The external ID of a new role destination of a workspace: {@link externalIdFor} under Sluice's external-ID
 * key, of the workspace's `uid`. The key is 32 random bytes, sealed with the secrets KMS key and stored once
 * in the control table (the first API instance to need it writes it; the others read that one); each instance
 * opens it once and keeps it in memory. Nothing but the API reads it, and it never leaves the function.
 */
export function externalIdSource(
  store: Pick<ApiStore, 'ensureWorkspace' | 'getSealedExternalIdKey' | 'putSealedExternalIdKey'>,
  sealer: ApiSealer,
): (workspaceId: string) => Promise<string> {
  let key: Promise<Buffer> | undefined;
  const loadKey = async (): Promise<Buffer> => {
    let sealed = await store.getSealedExternalIdKey();
    if (sealed === undefined) {
      const fresh = await sealer.seal(randomBytes(32).toString('hex'), EXTERNAL_ID_KEY_CONTEXT);
      sealed = (await store.putSealedExternalIdKey(fresh)) ? fresh : await store.getSealedExternalIdKey();
      if (sealed === undefined) throw new Error('The external-ID key was neither stored nor found.');
    }
    return Buffer.from(await sealer.open(sealed, EXTERNAL_ID_KEY_CONTEXT), 'hex');
  };
  return async (workspaceId) => {
    key ??= loadKey().catch((error: unknown) => {
      key = undefined;
      throw error;
    });
    const [secret, workspace] = await Promise.all([key, store.ensureWorkspace(workspaceId)]);
    return externalIdFor(secret, workspace.uid);
  };
}
