import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { DecryptCommand, GenerateDataKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import {
  isTransientServiceError,
  KmsUnavailableError,
  type SealedSecret,
  SecretRejectedError,
  SluiceError,
  TRANSIENT_KMS_ERROR_NAMES,
} from '@sluice/core';

/**
 * The one module-level KMS client; sealers use it unless a client is injected. The endpoint comes from
 * the SDK's own `AWS_ENDPOINT_URL_KMS` when set.
 */
export const kmsClient: KMSClient = new KMSClient({
  requestHandler: new NodeHttpHandler({ connectionTimeout: 2_000, requestTimeout: 10_000 }),
});

/** What a secret is bound to: KMS encryption context and local additional authenticated data. */
export interface SecretContext {
  workspaceId: string;
  destinationId: string;
}

const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;

/** True when a KMS call failed for a transient reason: throttling, a 5xx, a timeout or no connection. */
export function isTransientKmsError(error: unknown): boolean {
  return isTransientServiceError(error, TRANSIENT_KMS_ERROR_NAMES);
}

/** The KMS encryption context of a secret: exactly the workspace and the destination. */
function encryptionContext(context: SecretContext): Record<string, string> {
  return { workspaceId: context.workspaceId, destinationId: context.destinationId };
}

/** The local AES-GCM additional data: the same binding, so the sealed secret itself cannot be moved either. */
function additionalData(context: SecretContext): Buffer {
  return Buffer.from(
    `sluice-secret-v1\n${JSON.stringify([context.workspaceId, context.destinationId])}`,
    'utf8',
  );
}

function assertContext(context: SecretContext): void {
  if (
    typeof context?.workspaceId !== 'string' ||
    context.workspaceId === '' ||
    typeof context.destinationId !== 'string' ||
    context.destinationId === ''
  ) {
    throw new SluiceError('A secret context needs a workspaceId and a destinationId.');
  }
}

function decodeBase64(value: unknown, bytes?: number): Buffer | undefined {
  if (typeof value !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(value)) return undefined;
  const decoded = Buffer.from(value, 'base64');
  if (bytes !== undefined && decoded.length !== bytes) return undefined;
  return decoded;
}

/**
 * KMS envelope encryption of a destination's secret. `seal` asks KMS for an AES-256 data key bound to the
 * encryption context `{workspaceId, destinationId}`, encrypts the secret locally with AES-256-GCM and a
 * random 12-byte IV, and zeroes the plaintext data key. `open` has KMS decrypt the data key with the same
 * context, so a sealed secret copied onto another destination does not open.
 */
export class SecretSealer {
  private readonly client: KMSClient;
  private readonly keyId: string;

  /** @param options.keyId the KMS key new data keys are generated under (the entry point's configuration) */
  constructor(options: { client?: KMSClient; keyId: string }) {
    const keyId = options?.keyId;
    if (typeof keyId !== 'string' || keyId === '') {
      throw new Error('A sealer needs the KMS key id (keyId).');
    }
    this.client = options.client ?? kmsClient;
    this.keyId = keyId;
  }

  /**
   * Seals a secret for one destination.
   * 1. GenerateDataKey (AES_256) with the encryption context; 2. AES-256-GCM with a random IV and the
   * context as additional data; 3. zero the plaintext data key. KMS throttling or an unreachable KMS
   * throws {@link KmsUnavailableError} (retryable); other KMS errors are rethrown.
   */
  async seal(secret: string, context: SecretContext): Promise<SealedSecret> {
    assertContext(context);
    if (typeof secret !== 'string' || secret.length === 0)
      throw new SluiceError('The secret to seal is empty.');
    let dataKey: Uint8Array | undefined;
    try {
      const generated = await this.client.send(
        new GenerateDataKeyCommand({
          KeyId: this.keyId,
          KeySpec: 'AES_256',
          EncryptionContext: encryptionContext(context),
        }),
      );
      dataKey = generated.Plaintext;
      if (dataKey === undefined || dataKey.length !== KEY_BYTES || generated.CiphertextBlob === undefined) {
        throw new SluiceError('KMS returned no usable data key.');
      }
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', dataKey, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(additionalData(context));
      const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
      return {
        encryptedDataKey: Buffer.from(generated.CiphertextBlob).toString('base64'),
        iv: iv.toString('base64'),
        ciphertext: ciphertext.toString('base64'),
        tag: cipher.getAuthTag().toString('base64'),
      };
    } catch (error) {
      if (isTransientKmsError(error)) throw new KmsUnavailableError(error);
      throw error;
    } finally {
      dataKey?.fill(0);
    }
  }

  /**
   * Opens a sealed secret with the context it was sealed for. Any failure (another destination's record,
   * tampering, a refusing KMS) throws {@link SecretRejectedError}; a throttling or unreachable KMS
   * {@link KmsUnavailableError} (retryable).
   */
  async open(sealed: SealedSecret, context: SecretContext): Promise<string> {
    assertContext(context);
    const encryptedDataKey = decodeBase64(sealed?.encryptedDataKey);
    const iv = decodeBase64(sealed?.iv, IV_BYTES);
    const ciphertext = decodeBase64(sealed?.ciphertext);
    const tag = decodeBase64(sealed?.tag, TAG_BYTES);
    if (encryptedDataKey === undefined || encryptedDataKey.length === 0 || !iv || !ciphertext || !tag) {
      throw new SecretRejectedError();
    }
    let dataKey: Uint8Array | undefined;
    let plaintext: Buffer | undefined;
    try {
      const decrypted = await this.client.send(
        new DecryptCommand({
          CiphertextBlob: encryptedDataKey,
          EncryptionContext: encryptionContext(context),
          KeyId: this.keyId,
        }),
      );
      dataKey = decrypted.Plaintext;
      if (dataKey === undefined || dataKey.length !== KEY_BYTES)
        throw new SluiceError('KMS returned no data key.');
      const decipher = createDecipheriv('aes-256-gcm', dataKey, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(additionalData(context));
      decipher.setAuthTag(tag);
      plaintext = Buffer.concat([decipher.update(ciphertext), decipher.final()]);
      return plaintext.toString('utf8');
    } catch (error) {
      throw isTransientKmsError(error) ? new KmsUnavailableError(error) : new SecretRejectedError(error);
    } finally {
      dataKey?.fill(0);
      plaintext?.fill(0);
    }
  }
}
