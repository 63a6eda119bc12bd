import { createCipheriv, createDecipheriv, randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';

/** The account id the local KMS puts in its ARNs. */
export const LOCAL_ACCOUNT_ID = '000000000000';
const REGION = 'us-east-1';
const MAGIC = Buffer.from('SLK1');
const IV_BYTES = 12;
const TAG_BYTES = 16;
const MAX_BODY_BYTES = 1024 * 1024;

/** Options of {@link startKmsLocal}. */
export interface KmsLocalOptions {
  /**
   * Port on 127.0.0.1; 0 picks a free one.
   * @default 0
   */
  port?: number;
  /** JSON file holding the master keys (created with mode 0600); when absent the keys live in memory only. */
  keyFile?: string;
}

/** A running local KMS. */
export interface KmsLocal {
  /** `http://127.0.0.1:<port>`, for `AWS_ENDPOINT_URL_KMS`. */
  endpoint: string;
  port: number;
  /** Id of the default key (the first key of the key file, created when there is none). */
  keyId: string;
  /** ARN of the default key. */
  keyArn: string;
  /** Closes the server. Safe to call twice. */
  stop(): Promise<void>;
}

interface StoredKey {
  material: string;
  createdAt: number;
  description: string;
}
interface KeyFile {
  keys: Record<string, StoredKey>;
}

/** An error in the KMS JSON error format: `{"__type": name, "message": message}`. */
class KmsError extends Error {
  constructor(
    readonly type: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
    this.name = type;
  }
}

/** The key store and the operations, without HTTP: pure functions over a key map. */
class LocalKms {
  private readonly keys: Map<string, StoredKey>;

  constructor(private readonly keyFile: string | undefined) {
    const loaded: KeyFile =
      keyFile && existsSync(keyFile) ? (JSON.parse(readFileSync(keyFile, 'utf8')) as KeyFile) : { keys: {} };
    this.keys = new Map(Object.entries(loaded.keys));
  }

  async defaultKeyId(): Promise<string> {
    const first = this.keys.keys().next();
    if (!first.done) return first.value;
    return this.createKey('Sluice local key');
  }

  async createKey(description: string): Promise<string> {
    const id = randomUUID();
    this.keys.set(id, { material: randomBytes(32).toString('base64'), createdAt: Date.now(), description });
    await this.save();
    return id;
  }

  private async save(): Promise<void> {
    if (!this.keyFile) return;
    await mkdir(dirname(this.keyFile), { recursive: true });
    const temp = `${this.keyFile}.${process.pid}.tmp`;
    const content: KeyFile = { keys: Object.fromEntries(this.keys) };
    await writeFile(temp, JSON.stringify(content, null, 2), { mode: 0o600 });
    await rename(temp, this.keyFile);
  }

  /** Resolves a key id or key ARN to a stored key id, or throws NotFoundException. */
  resolve(keyId: unknown): string {
    if (typeof keyId !== 'string' || keyId === '')
      throw new KmsError('ValidationException', 'KeyId is required');
    const match = /^arn:aws:kms:[^:]+:[^:]+:key\/(.+)$/.exec(keyId);
    const id = match?.[1] ?? keyId;
    if (!this.keys.has(id)) throw new KmsError('NotFoundException', `Key '${keyId}' does not exist`);
    return id;
  }

  arn(id: string): string {
    return `arn:aws:kms:${REGION}:${LOCAL_ACCOUNT_ID}:key/${id}`;
  }

  private material(id: string): Buffer {
    const key = this.keys.get(id);
    if (!key) throw new KmsError('NotFoundException', `Key '${id}' does not exist`);
    return Buffer.from(key.material, 'base64');
  }

  encrypt(id: string, plaintext: Buffer, context: unknown): Buffer {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.material(id), iv);
    cipher.setAAD(additionalData(context));
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    const idBytes = Buffer.from(id, 'utf8');
    return Buffer.concat([
      MAGIC,
      Buffer.from([idBytes.length]),
      idBytes,
      iv,
      cipher.getAuthTag(),
      ciphertext,
    ]);
  }

  decrypt(blob: Buffer, context: unknown, expectedKeyId: unknown): { id: string; plaintext: Buffer } {
    const invalid = () => new KmsError('InvalidCiphertextException', 'The ciphertext is invalid');
    if (blob.length < MAGIC.length + 1 || !blob.subarray(0, MAGIC.length).equals(MAGIC)) throw invalid();
    const idLength = blob[MAGIC.length] ?? 0;
    const idStart = MAGIC.length + 1;
    const ivStart = idStart + idLength;
    const tagStart = ivStart + IV_BYTES;
    const dataStart = tagStart + TAG_BYTES;
    if (blob.length < dataStart) throw invalid();
    const id = blob.subarray(idStart, ivStart).toString('utf8');
    if (!this.keys.has(id)) throw invalid();
    if (expectedKeyId !== undefined && this.resolve(expectedKeyId) !== id) {
      throw new KmsError('IncorrectKeyException', 'The key ID in the request does not identify the key used');
    }
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.material(id), blob.subarray(ivStart, tagStart));
      decipher.setAAD(additionalData(context));
      decipher.setAuthTag(blob.subarray(tagStart, dataStart));
      return { id, plaintext: Buffer.concat([decipher.update(blob.subarray(dataStart)), decipher.final()]) };
    } catch {
      throw invalid();
    }
  }

  describe(id: string): Record<string, unknown> {
    const key = this.keys.get(id);
    return {
      AWSAccountId: LOCAL_ACCOUNT_ID,
      KeyId: id,
      Arn: this.arn(id),
      CreationDate: (key?.createdAt ?? 0) / 1000,
      Enabled: true,
      Description: key?.description ?? '',
      KeyUsage: 'ENCRYPT_DECRYPT',
      KeyState: 'Enabled',
      Origin: 'AWS_KMS',
      KeyManager: 'CUSTOMER',
      KeySpec: 'SYMMETRIC_DEFAULT',
      CustomerMasterKeySpec: 'SYMMETRIC_DEFAULT',
      EncryptionAlgorithms: ['SYMMETRIC_DEFAULT'],
      MultiRegion: false,
    };
  }

  /** Runs one operation on a parsed request body. */
  async handle(operation: string, input: Record<string, unknown>): Promise<Record<string, unknown>> {
    switch (operation) {
      case 'GenerateDataKey':
      case 'GenerateDataKeyWithoutPlaintext': {
        const id = this.resolve(input.KeyId);
        const bytes = dataKeyBytes(input.KeySpec, input.NumberOfBytes);
        const plaintext = randomBytes(bytes);
        const output: Record<string, unknown> = {
          KeyId: this.arn(id),
          CiphertextBlob: this.encrypt(id, plaintext, input.EncryptionContext).toString('base64'),
        };
        if (operation === 'GenerateDataKey') output.Plaintext = plaintext.toString('base64');
        return output;
      }
      case 'Encrypt': {
        const id = this.resolve(input.KeyId);
        const plaintext = blobInput(input.Plaintext, 'Plaintext');
        if (plaintext.length < 1 || plaintext.length > 4096) {
          throw new KmsError('ValidationException', 'Plaintext must be between 1 and 4096 bytes');
        }
        return {
          KeyId: this.arn(id),
          CiphertextBlob: this.encrypt(id, plaintext, input.EncryptionContext).toString('base64'),
          EncryptionAlgorithm: 'SYMMETRIC_DEFAULT',
        };
      }
      case 'Decrypt': {
        const blob = blobInput(input.CiphertextBlob, 'CiphertextBlob');
        const { id, plaintext } = this.decrypt(blob, input.EncryptionContext, input.KeyId);
        return {
          KeyId: this.arn(id),
          Plaintext: plaintext.toString('base64'),
          EncryptionAlgorithm: 'SYMMETRIC_DEFAULT',
        };
      }
      case 'DescribeKey':
        return { KeyMetadata: this.describe(this.resolve(input.KeyId)) };
      case 'CreateKey': {
        const description = typeof input.Description === 'string' ? input.Description : '';
        return { KeyMetadata: this.describe(await this.createKey(description)) };
      }
      default:
        throw new KmsError('UnknownOperationException', `Operation ${operation} is not supported locally`);
    }
  }
}

/** The AAD of an encryption context: its JSON with keys sorted, `{}` when absent. */
function additionalData(context: unknown): Buffer {
  if (context === undefined || context === null) return Buffer.from('{}');
  if (typeof context !== 'object' || Array.isArray(context)) {
    throw new KmsError('ValidationException', 'EncryptionContext must be a map of strings');
  }
  const entries = Object.entries(context as Record<string, unknown>);
  for (const [, value] of entries) {
    if (typeof value !== 'string')
      throw new KmsError('ValidationException', 'EncryptionContext values are strings');
  }
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Buffer.from(JSON.stringify(Object.fromEntries(entries)));
}

function dataKeyBytes(keySpec: unknown, numberOfBytes: unknown): number {
  if (keySpec !== undefined && numberOfBytes !== undefined) {
    throw new KmsError('ValidationException', 'Specify either KeySpec or NumberOfBytes, not both');
  }
  if (keySpec === 'AES_256') return 32;
  if (keySpec === 'AES_128') return 16;
  if (keySpec !== undefined)
    throw new KmsError('ValidationException', `Unsupported KeySpec ${String(keySpec)}`);
  if (
    typeof numberOfBytes === 'number' &&
    Number.isInteger(numberOfBytes) &&
    numberOfBytes >= 1 &&
    numberOfBytes <= 1024
  ) {
    return numberOfBytes;
  }
  throw new KmsError('ValidationException', 'KeySpec or NumberOfBytes (1..1024) is required');
}

function blobInput(value: unknown, name: string): Buffer {
  if (typeof value !== 'string' || value === '')
    throw new KmsError('ValidationException', `${name} is required`);
  return Buffer.from(value, 'base64');
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new KmsError('ValidationException', 'Request body too large', 413);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function send(response: ServerResponse, status: number, body: Record<string, unknown>, type?: string): void {
  const payload = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/x-amz-json-1.1',
    'content-length': Buffer.byteLength(payload),
    'x-amzn-requestid': randomUUID(),
    ...(type ? { 'x-amzn-errortype': type } : {}),
  });
  response.end(payload);
}

/**
 * Starts a local KMS on 127.0.0.1 speaking the KMS JSON 1.1 protocol (`X-Amz-Target: TrentService.<Op>`),
 * enough for `@aws-sdk/client-kms` pointed at it with `AWS_ENDPOINT_URL_KMS`.
 *
 * Operations: GenerateDataKey, GenerateDataKeyWithoutPlaintext, Encrypt, Decrypt, DescribeKey, CreateKey.
 * Ciphertext is real AES-256-GCM under a per-key master key, with the encryption context (JSON, keys sorted)
 * as additional authenticated data; the blob is `SLK1 | key id length | key id | iv | tag | ciphertext`.
 * Decrypting with another context or a tampered blob fails with `InvalidCiphertextException`, an unknown
 * key with `NotFoundException`. Requests are not authenticated: it only listens on loopback.
 */
export async function startKmsLocal(options: KmsLocalOptions = {}): Promise<KmsLocal> {
  const kms = new LocalKms(options.keyFile);
  const keyId = await kms.defaultKeyId();
  const server = createServer((request, response) => {
    void (async () => {
      try {
        if (request.method !== 'POST') throw new KmsError('UnknownOperationException', 'Use POST', 405);
        const target = request.headers['x-amz-target'];
        const operation =
          typeof target === 'string' && target.startsWith('TrentService.') ? target.slice(13) : '';
        if (!operation)
          throw new KmsError('UnknownOperationException', 'Missing X-Amz-Target: TrentService.<Op>');
        const text = await readBody(request);
        let input: unknown;
        try {
          input = text === '' ? {} : JSON.parse(text);
        } catch {
          throw new KmsError('SerializationException', 'The request body is not JSON');
        }
        if (typeof input !== 'object' || input === null || Array.isArray(input)) {
          throw new KmsError('SerializationException', 'The request body must be a JSON object');
        }
        send(response, 200, await kms.handle(operation, input as Record<string, unknown>));
      } catch (error) {
        if (error instanceof KmsError) {
          send(response, error.status, { __type: error.type, message: error.message }, error.type);
        } else {
          send(
            response,
            500,
            { __type: 'KMSInternalException', message: 'Internal error' },
            'KMSInternalException',
          );
        }
      }
    })();
  });
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolveListen();
    });
  });
  const port = (server.address() as AddressInfo).port;
  let stopping: Promise<void> | undefined;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    keyId,
    keyArn: kms.arn(keyId),
    stop() {
      stopping ??= new Promise<void>((resolveClose) => {
        server.close(() => resolveClose());
        server.closeAllConnections();
      });
      return stopping;
    },
  };
}
