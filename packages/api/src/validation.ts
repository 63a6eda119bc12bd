/**
 * Request validation for the Data Exports API, in two stages with one rule between them:
 *
 * 1. The body is checked against the OpenAPI request schema (JSON types, required fields, enums,
 *    `maxLength`, `minItems`, `format: date-time`). A body that does not match it is `422
 *    unprocessable_entity`: the client sent the wrong shape (not an object, a number for a string, an unknown
 *    dataset, frequency or provider, a missing required field, a 256-character name, no dataset at all).
 * 2. A body that matches the schema but carries an invalid value is `400 invalid_input`: empty name, a URL as
 *    bucket, a missing region, an unsafe endpoint, a bad path prefix, a duplicate dataset, a `startFrom` out of
 *    range, credentials sent alone on PATCH, and unknown properties. Unknown properties are refused rather than
 *    ignored, so that a misspelt field (`isEnabeld: false`) never looks like a successful change.
 *
 * So a 422 body always fails the OpenAPI request schema and a 400 `invalid_input` body always passes it; the
 * contract suite checks both. Issues carry dotted paths (`datasets[1]`), at most ten, and the error message
 * summarises the first three. No message ever contains the value of `secretAccessKey`.
 */
import {
  ALL_CHILDREN,
  type BucketLocation,
  COMPRESSIONS,
  type Compression,
  type ObjectEncryption,
  SERVER_SIDE_ENCRYPTIONS,
  type ServerSideEncryption,
  DATASETS,
  DEFAULT_DATASETS,
  DEFAULT_FREQUENCY,
  type Dataset,
  type Destination,
  EXPORT_FORMATS,
  type ExportFormat,
  type FileFormat,
  fileFormatOf,
  FREQUENCIES,
  type Frequency,
  InputShapeError,
  type InputIssue,
  InvalidInputError,
  LAYOUTS,
  type Layout,
  layoutOf,
  PROVIDERS,
  type Provider,
  requestedFileFormat,
  ROLE_ARN_RE,
  roleAccountId,
  type Schedule,
  scheduleIssues,
  isWorkspaceId,
  WORKSPACE_ID_RULE,
} from '@sluice/core';
import { type EndpointPolicyOptions, parseEndpoint } from '@sluice/sinks';
import { type ZodType, z } from 'zod';
import { isKeySafeId } from '@sluice/control';
import type { RunsPageToken } from './ports.js';

/** At most this many issues are reported. */
export const MAX_ISSUES = 10;
/** How far back `startFrom` may reach. */
export const START_FROM_MAX_AGE_MS = 30 * 24 * 60 * 60 * 1000;
/** Clock skew tolerated on both ends of the `startFrom` range. */
export const CLOCK_SKEW_MS = 60 * 1000;
/** Longest path prefix accepted, after trimming slashes. */
export const MAX_PATH_PREFIX_LENGTH = 512;
/** Default and bounds of the `limit` query parameter of the runs list. */
export const RUNS_LIMIT = { default: 20, min: 1, max: 100 } as const;

const MAX_ACCESS_KEY_ID_LENGTH = 256;
/**
 * The characters of an access key ID (AWS, Google Cloud Storage HMAC, R2 and other S3-compatible stores): it
 * goes into the request's Authorization header, where anything else breaks the signature or the header.
 */
const ACCESS_KEY_ID_RE = /^[A-Za-z0-9._+=-]+$/;
const MAX_SECRET_LENGTH = 1024;

const nullableString = z.string().nullable().optional();
/** `schedule` as the OpenAPI document describes it; the ranges are checked in stage 2 (`scheduleIssues`). */
const scheduleSchema = z
  .strictObject({ minute: z.number().int(), hour: z.number().int().optional() })
  .nullable()
  .optional();

/** Stage 1 of create: the OpenAPI `createDataExport` request schema. */
export const createRequestSchema = z.looseObject({
  name: z.string().max(255),
  provider: z.enum(PROVIDERS),
  bucket: z.string(),
  region: nullableString,
  endpoint: nullableString,
  pathPrefix: nullableString,
  accessKeyId: z.string().optional(),
  secretAccessKey: z.string().optional(),
  roleArn: z.string().optional(),
  datasets: z.array(z.enum(DATASETS)).min(1).optional(),
  frequency: z.enum(FREQUENCIES).optional(),
  startFrom: z.iso.datetime({ offset: true }).nullable().optional(),
  format: z.enum(EXPORT_FORMATS).optional(),
  compression: z.enum(COMPRESSIONS).optional(),
  serverSideEncryption: z.enum(SERVER_SIDE_ENCRYPTIONS).nullable().optional(),
  kmsKeyId: nullableString,
  layout: z.enum(LAYOUTS).optional(),
  schedule: scheduleSchema,
  childOrganizations: z.array(z.string()).optional(),
});

/** Stage 1 of PATCH: the OpenAPI `updateDataExport` request schema. */
export const updateRequestSchema = z.looseObject({
  name: z.string().max(255).optional(),
  bucket: z.string().optional(),
  region: nullableString,
  endpoint: nullableString,
  pathPrefix: nullableString,
  accessKeyId: z.string().optional(),
  secretAccessKey: z.string().optional(),
  roleArn: z.string().optional(),
  datasets: z.array(z.enum(DATASETS)).min(1).optional(),
  frequency: z.enum(FREQUENCIES).optional(),
  isEnabled: z.boolean().optional(),
  format: z.enum(EXPORT_FORMATS).optional(),
  compression: z.enum(COMPRESSIONS).optional(),
  serverSideEncryption: z.enum(SERVER_SIDE_ENCRYPTIONS).nullable().optional(),
  kmsKeyId: nullableString,
  layout: z.enum(LAYOUTS).optional(),
  schedule: scheduleSchema,
  childOrganizations: z.array(z.string()).optional(),
});

const CREATE_FIELDS = Object.keys(createRequestSchema.shape);
const UPDATE_FIELDS = Object.keys(updateRequestSchema.shape);

/** An access key pair as sent: the secret in clear, for the connection test and the sealer only. */
export interface AccessKeyInput {
  accessKeyId: string;
  secretAccessKey: string;
}

/** A validated create request: every default applied, every value normalised. */
export interface CreateRequest {
  name: string;
  location: BucketLocation;
  /** An access key pair, or the IAM role to assume (Amazon S3 only). */
  credentials: AccessKeyInput | { roleArn: string };
  datasets: Dataset[];
  frequency: Frequency;
  startFrom: string;
  fileFormat: FileFormat;
  layout: Layout;
  schedule: Schedule | null;
  /** Child workspace ids or `['*']`, well-formed (whether they are children is the use case's check); [] none. */
  childOrganizations: string[];
}

/**
 * A validated PATCH request. Location fields keep the caller's intent: `undefined` leaves the stored value,
 * `null` (or `''` for region and endpoint) asks for the default. Merge with {@link resolveUpdatedLocation}.
 */
export interface UpdateRequest {
  name?: string;
  bucket?: string;
  region?: string | null;
  endpoint?: string | null;
  pathPrefix?: string;
  credentials?: AccessKeyInput;
  /** A new role for a role destination (its external ID stays). */
  roleArn?: string;
  datasets?: Dataset[];
  frequency?: Frequency;
  isEnabled?: boolean;
  format?: ExportFormat;
  compression?: Compression;
  layout?: Layout;
  /** Absent: unchanged; null: none (the spread slot). */
  schedule?: Schedule | null;
  /** Absent: unchanged; null: none. */
  serverSideEncryption?: ServerSideEncryption | null;
  /** Absent: unchanged (or none when `serverSideEncryption` is sent); null: none. */
  kmsKeyId?: string | null;
  /** Absent: unchanged; []: none. Well-formed; whether they are children is the use case's check. */
  childOrganizations?: string[];
}

const MAX_KMS_KEY_ID_LENGTH = 2048;
/** A KMS key id, key ARN, alias name or alias ARN (empty: the bucket's default key). */
const KMS_KEY_ID_RE = /^[A-Za-z0-9:/_-]*$/;

/**
 * Checks the server-side encryption fields: offered for Amazon S3 and S3-compatible stores, not gcs;
 * `kmsKeyId` only with `aws:kms`. Pushes the problems to `issues`; returns the encryption or null for none.
 */
export function resolveEncryption(
  provider: Provider,
  serverSideEncryption: ServerSideEncryption | null | undefined,
  kmsKeyId: string | null | undefined,
  issues: InputIssue[],
): ObjectEncryption | null {
  const keyId = kmsKeyId?.trim() ?? '';
  if (serverSideEncryption === null || serverSideEncryption === undefined) {
    if (keyId !== '') {
      issues.push({ path: 'kmsKeyId', message: 'kmsKeyId needs serverSideEncryption aws:kms.' });
    }
    return null;
  }
  if (provider === 'gcs') {
    issues.push({
      path: 'serverSideEncryption',
      message:
        'Server-side encryption settings are not offered for gcs: Google Cloud Storage encrypts every object; set a default key on the bucket instead.',
    });
    return null;
  }
  if (serverSideEncryption === 'AES256') {
    if (keyId !== '') {
      issues.push({ path: 'kmsKeyId', message: 'kmsKeyId needs serverSideEncryption aws:kms, not AES256.' });
    }
    return { serverSideEncryption };
  }
  if (keyId.length > MAX_KMS_KEY_ID_LENGTH || !KMS_KEY_ID_RE.test(keyId)) {
    issues.push({
      path: 'kmsKeyId',
      message: `kmsKeyId is a key id, ARN or alias: letters, digits and : / _ - only, at most ${MAX_KMS_KEY_ID_LENGTH} characters.`,
    });
  }
  return keyId === '' ? { serverSideEncryption } : { serverSideEncryption, kmsKeyId: keyId };
}

/** Formats a path as the API reports it: `datasets[1]`, `audience.subscriberIds[0]`, `''` for the body. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out;
}

/** The `error` text for a list of issues: the only message, or the first three with their paths. */
export function summarizeIssues(issues: readonly InputIssue[], fallback: string): string {
  if (issues.length === 0) return fallback;
  if (issues.length === 1) return issues[0]!.message;
  const head = issues
    .slice(0, 3)
    .map((issue) => (issue.path ? `${issue.path}: ${issue.message}` : issue.message))
    .join('; ');
  const more = issues.length > 3 ? ` (and ${issues.length - 3} more)` : '';
  return `${head}${more}`;
}

export function invalidInput(issues: InputIssue[]): InvalidInputError {
  const kept = issues.slice(0, MAX_ISSUES);
  return new InvalidInputError(summarizeIssues(kept, 'Invalid request'), kept);
}

function unprocessable(issues: InputIssue[]): InputShapeError {
  const kept = issues.slice(0, MAX_ISSUES);
  return new InputShapeError(summarizeIssues(kept, 'The request body does not match the schema'), kept);
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (value === undefined) return 'nothing';
  const type = typeof value;
  return type === 'object' ? 'an object' : `a ${type}`;
}

const EXPECTED: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  boolean: 'a boolean',
  array: 'an array',
  object: 'a JSON object',
};

/** Turns one zod issue of stage 1 into an API issue, in words, never echoing a secret. */
function schemaIssue(issue: z.core.$ZodIssue): InputIssue {
  const path = formatPath(issue.path);
  switch (issue.code) {
    case 'invalid_type': {
      const expected = EXPECTED[issue.expected] ?? issue.expected;
      if (issue.input === undefined) return { path, message: 'Required' };
      if (path === '') return { path, message: `The request body must be ${expected}.` };
      return { path, message: `Expected ${expected}, got ${jsonType(issue.input)}.` };
    }
    case 'invalid_value': {
      const shown = typeof issue.input === 'string' ? `"${issue.input}"` : jsonType(issue.input);
      return {
        path,
        message: `Unknown value ${shown}. Allowed: ${issue.values.join(', ')}.`,
        allowedValues: issue.values,
      };
    }
    case 'too_big':
      return { path, message: `At most ${String(issue.maximum)} characters.` };
    case 'too_small':
      return { path, message: 'Send at least one value.' };
    case 'invalid_format':
      return {
        path,
        message: 'Expected an ISO 8601 date-time with a time zone, such as 2026-09-30T12:00:00Z.',
      };
    default:
      return { path, message: 'Invalid value.' };
  }
}

export function parseSchema<T extends ZodType>(schema: T, body: unknown): z.infer<T> {
  const result = schema.safeParse(body, { reportInput: true });
  if (!result.success) throw unprocessable(result.error.issues.map(schemaIssue));
  return result.data;
}

/**
 * The fields of the body as sent that the schema does not name. Read from the parsed body itself, not from
 * zod's output: JSON.parse makes `"__proto__"` an own property, which zod's copy drops without a word.
 */
export function unknownFields(body: object, known: readonly string[]): InputIssue[] {
  return Object.keys(body)
    .filter((key) => !known.includes(key))
    .map((key) => ({
      path: key,
      message: `Unknown field "${key}".`,
      allowedValues: known,
    }));
}

/**
 * Characters a name may not hold: control characters (Cc: NUL, ESC, CR, LF, DEL, C1) and the bidirectional
 * marks and overrides (U+200E-F, U+202A-E, U+2066-9). Printed by a terminal or a table they forge lines,
 * colours, titles or the order of the text around them.
 */
export const UNSAFE_NAME_CHARACTERS = /[\p{Cc}\u200E\u200F\u202A-\u202E\u2066-\u2069]/u;

function checkName(raw: string, issues: InputIssue[]): string {
  const name = raw.trim();
  if (name === '') issues.push({ path: 'name', message: 'Name must not be empty.' });
  else if (UNSAFE_NAME_CHARACTERS.test(name)) {
    issues.push({
      path: 'name',
      message: 'Name must not contain control characters or bidirectional marks and overrides.',
    });
  }
  return name;
}

const BUCKET_RE = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const GCS_BUCKET_RE = /^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$/;
const IPV4_RE = /^\d{1,3}(\.\d{1,3}){3}$/;

/** The problem with a bucket name, or undefined when it is valid for the provider. */
export function bucketNameProblem(bucket: string, provider: Provider): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(bucket) || bucket.includes('/') || /^(s3|gs):/i.test(bucket)) {
    return 'Bucket name, not a URL (for example acme-exports). Put a folder in pathPrefix.';
  }
  if (bucket.length < 3 || bucket.length > 63) return 'Bucket names are 3 to 63 characters long.';
  const pattern = provider === 'gcs' ? GCS_BUCKET_RE : BUCKET_RE;
  if (!pattern.test(bucket)) {
    return provider === 'gcs'
      ? 'Bucket names use lowercase letters, digits, dots, hyphens and underscores, and start and end with a letter or digit.'
      : 'Bucket names use lowercase letters, digits, dots and hyphens, and start and end with a letter or digit.';
  }
  if (bucket.includes('..') || bucket.includes('.-') || bucket.includes('-.')) {
    return 'Bucket names cannot have two dots in a row or a dot next to a hyphen.';
  }
  if (IPV4_RE.test(bucket)) return 'Bucket names cannot be IP addresses.';
  return undefined;
}

const AWS_REGION_RE = /^[a-z]{2}(-[a-z]+)+-\d{1,2}$/;
const OTHER_REGION_RE = /^[a-z0-9][a-z0-9-]{0,62}$/i;
const REGION_REQUIRED = 'Region is required for Amazon S3 (for example us-east-1).';

const PREFIX_CHARS_RE = /^[A-Za-z0-9/!_.*'()=-]*$/;

/** Normalises a path prefix (leading and trailing slashes removed) and reports what is wrong with it. */
export function normalizePathPrefix(raw: string | null | undefined, issues: InputIssue[]): string {
  const prefix = (raw ?? '').trim().replace(/^\/+/, '').replace(/\/+$/, '');
  if (prefix === '') return '';
  const before = issues.length;
  if (!PREFIX_CHARS_RE.test(prefix)) {
    issues.push({
      path: 'pathPrefix',
      message: "Path prefix may contain only letters, numbers, / and ! _ . * ' ( ) = -",
    });
  } else if (prefix.length > MAX_PATH_PREFIX_LENGTH) {
    issues.push({
      path: 'pathPrefix',
      message: `Path prefix is at most ${MAX_PATH_PREFIX_LENGTH} characters.`,
    });
  } else {
    const segments = prefix.split('/');
    if (segments.some((segment) => segment === '..' || segment === '.')) {
      issues.push({ path: 'pathPrefix', message: 'Path prefix cannot contain . or .. segments.' });
    } else if (segments.some((segment) => segment === '')) {
      issues.push({ path: 'pathPrefix', message: 'Path prefix cannot contain empty segments (//).' });
    }
  }
  return issues.length === before ? prefix : '';
}

function checkEndpoint(raw: string, issues: InputIssue[], policy: EndpointPolicyOptions): string | null {
  try {
    return parseEndpoint(raw, policy);
  } catch (error) {
    if (error instanceof InvalidInputError) {
      const found = error.issues?.filter((issue) => issue.path === 'endpoint') ?? [];
      if (found.length > 0) issues.push(...found);
      else issues.push({ path: 'endpoint', message: error.message });
      return null;
    }
    throw error;
  }
}

/** The location fields as sent, or merged from the stored destination on PATCH. */
export interface LocationInput {
  provider: Provider;
  bucket: string;
  region: string | null | undefined;
  endpoint: string | null | undefined;
  pathPrefix: string | null | undefined;
}

/**
 * Checks and normalises a bucket location: bucket name, endpoint (HTTPS origin via `parseEndpoint`, not with
 * gcs), region (required for Amazon S3 without an endpoint, `auto` otherwise) and path prefix. Pushes the
 * problems to `issues`; the result is meaningful only when none were pushed.
 */
export function resolveLocation(
  input: LocationInput,
  issues: InputIssue[],
  policy: EndpointPolicyOptions = {},
): BucketLocation {
  const bucket = input.bucket.trim();
  const bucketProblem = bucketNameProblem(bucket, input.provider);
  if (bucketProblem) issues.push({ path: 'bucket', message: bucketProblem });

  let endpoint: string | null = null;
  const rawEndpoint = input.endpoint?.trim() ?? '';
  if (rawEndpoint !== '') {
    if (input.provider === 'gcs') {
      issues.push({
        path: 'endpoint',
        message: 'Endpoint is not allowed with gcs: Google Cloud Storage is always storage.googleapis.com.',
      });
    } else {
      endpoint = checkEndpoint(rawEndpoint, issues, policy);
    }
  }

  const rawRegion = input.region?.trim() ?? '';
  const isAws = input.provider === 's3' && rawEndpoint === '';
  let region = rawRegion === '' ? 'auto' : rawRegion;
  if (isAws) {
    if (rawRegion === '' || rawRegion === 'auto') issues.push({ path: 'region', message: REGION_REQUIRED });
    else if (!AWS_REGION_RE.test(rawRegion)) {
      issues.push({
        path: 'region',
        message: 'Not an AWS region name (for example us-east-1 or eu-west-2).',
      });
    }
  } else if (!OTHER_REGION_RE.test(region)) {
    issues.push({
      path: 'region',
      message: 'Region may contain only letters, digits and hyphens (or auto).',
    });
  }
  if (isAws) region = rawRegion;

  const pathPrefix = normalizePathPrefix(input.pathPrefix, issues);
  return { provider: input.provider, bucket, region, endpoint, pathPrefix };
}

function checkCredentials(
  accessKeyId: string,
  secretAccessKey: string,
  issues: InputIssue[],
): { accessKeyId: string; secretAccessKey: string } {
  const id = accessKeyId.trim();
  const secret = secretAccessKey.trim();
  if (id === '') issues.push({ path: 'accessKeyId', message: 'Access key ID must not be empty.' });
  else if (id.length > MAX_ACCESS_KEY_ID_LENGTH || !ACCESS_KEY_ID_RE.test(id)) {
    issues.push({
      path: 'accessKeyId',
      message: `Access key ID is letters, digits and . _ + = - only, at most ${MAX_ACCESS_KEY_ID_LENGTH} characters.`,
    });
  }
  if (secret === '')
    issues.push({ path: 'secretAccessKey', message: 'Secret access key must not be empty.' });
  else if (secret.length > MAX_SECRET_LENGTH || /\s/.test(secret)) {
    issues.push({
      path: 'secretAccessKey',
      message: `Secret access key has no spaces and at most ${MAX_SECRET_LENGTH} characters.`,
    });
  }
  return { accessKeyId: id, secretAccessKey: secret };
}

const ROLE_ARN_FORMAT =
  'roleArn is an IAM role ARN: arn:aws:iam::<12-digit account>:role/<name> (or another AWS partition, arn:aws-cn:...).';

/** Checks a role ARN's shape (see `ROLE_ARN_RE`); returns it trimmed. */
function checkRoleArn(raw: string, issues: InputIssue[]): string {
  const roleArn = raw.trim();
  if (!ROLE_ARN_RE.test(roleArn)) issues.push({ path: 'roleArn', message: ROLE_ARN_FORMAT });
  return roleArn;
}

/**
 * Refuses a role in Sluice's own AWS account (400 `invalid_input` on `roleArn`): Sluice's functions may
 * assume roles, and one of its own account that trusts the account could otherwise be assumed for a tenant
 * (the confused deputy). The IAM grant refuses it too (`aws:ResourceAccount`). No own account: nothing refused.
 */
export function assertRoleOutsideOwnAccount(roleArn: string, ownAccountId: string | undefined): void {
  if (ownAccountId === undefined || roleAccountId(roleArn) !== ownAccountId) return;
  throw invalidInput([
    {
      path: 'roleArn',
      message: "roleArn names a role in Sluice's own AWS account: name a role of your own account.",
    },
  ]);
}

/** Roles are assumed through AWS STS: Amazon S3 only, not GCS or an S3-compatible store's endpoint. */
function checkRoleProvider(
  location: Pick<BucketLocation, 'provider' | 'endpoint'>,
  issues: InputIssue[],
): void {
  if (location.provider !== 's3' || location.endpoint !== null) {
    issues.push({
      path: 'roleArn',
      message:
        'roleArn is for Amazon S3 only (provider s3 without an endpoint); Google Cloud Storage and S3-compatible stores take accessKeyId and secretAccessKey.',
    });
  }
}

/**
 * The credentials of a create: exactly one way, an access key pair (both fields) or `roleArn` (Amazon S3
 * only). Pushes the problems to `issues`.
 */
function checkCreateCredentials(
  data: {
    accessKeyId?: string | undefined;
    secretAccessKey?: string | undefined;
    roleArn?: string | undefined;
  },
  location: BucketLocation,
  issues: InputIssue[],
): CreateRequest['credentials'] {
  if (data.roleArn !== undefined) {
    if (data.accessKeyId !== undefined || data.secretAccessKey !== undefined) {
      issues.push({
        path: 'roleArn',
        message: 'Send either roleArn or accessKeyId and secretAccessKey, not both.',
      });
    }
    checkRoleProvider(location, issues);
    return { roleArn: checkRoleArn(data.roleArn, issues) };
  }
  // Without roleArn the schema requires both keys (see `missingCredentials`).
  if (data.accessKeyId === undefined || data.secretAccessKey === undefined) {
    return { accessKeyId: '', secretAccessKey: '' };
  }
  return checkCredentials(data.accessKeyId, data.secretAccessKey, issues);
}

/**
 * A create without roleArn must carry both keys, as the reference schema requires them (its `anyOf`: both keys,
 * or roleArn): a body without them does not match the schema, so it is a 422 like any missing required field.
 */
function missingCredentials(data: {
  accessKeyId?: string | undefined;
  secretAccessKey?: string | undefined;
  roleArn?: string | undefined;
}): InputIssue[] {
  if (data.roleArn !== undefined) return [];
  return (['accessKeyId', 'secretAccessKey'] as const)
    .filter((field) => data[field] === undefined)
    .map((field) => ({
      path: field,
      message:
        'Required: send accessKeyId and secretAccessKey, or roleArn (an IAM role Sluice assumes, Amazon S3 only).',
    }));
}

function checkDatasets(datasets: readonly Dataset[], issues: InputIssue[]): Dataset[] {
  datasets.forEach((dataset, index) => {
    if (datasets.indexOf(dataset) !== index) {
      issues.push({ path: `datasets[${index}]`, message: `Dataset "${dataset}" is listed twice.` });
    }
  });
  return [...datasets];
}

/**
 * `childOrganizations` as sent: workspace ids, each once, or exactly `["*"]` (every current and future child).
 * Pushes an issue at `childOrganizations[i]` for a malformed id, a duplicate, or `"*"` beside ids.
 */
function checkChildOrganizations(children: readonly string[], issues: InputIssue[]): string[] {
  children.forEach((child, index) => {
    const path = `childOrganizations[${index}]`;
    // JSON-quoted, so a control character sent is shown escaped, never printed.
    const shown = JSON.stringify(child.slice(0, 128));
    if (child === ALL_CHILDREN) {
      if (children.length > 1) {
        issues.push({ path, message: '"*" (every child) cannot be listed with other organizations.' });
      }
    } else if (!isWorkspaceId(child)) {
      issues.push({ path, message: `${shown} is not a workspace id: ${WORKSPACE_ID_RULE}.` });
    } else if (children.indexOf(child) !== index) {
      issues.push({ path, message: `Organization ${shown} is listed twice.` });
    }
  });
  return [...children];
}

function checkStartFrom(raw: string | null | undefined, now: Date, issues: InputIssue[]): string {
  if (raw === null || raw === undefined) return now.toISOString();
  const ms = Date.parse(raw);
  if (ms < now.getTime() - START_FROM_MAX_AGE_MS - CLOCK_SKEW_MS) {
    issues.push({ path: 'startFrom', message: 'startFrom can be at most 30 days ago.' });
  } else if (ms > now.getTime() + CLOCK_SKEW_MS) {
    issues.push({ path: 'startFrom', message: 'startFrom cannot be in the future.' });
  }
  return new Date(Math.min(ms, now.getTime())).toISOString();
}

/**
 * Validates a create request body (already parsed JSON). Throws `InputShapeError` (422) when it does not
 * match the schema, `InvalidInputError` (400) when a value is invalid; otherwise returns it with defaults:
 * datasets email_events, custom_events, subscribers; frequency every_15_minutes; startFrom now; region `auto`
 * for gcs and custom endpoints; pathPrefix ''.
 */
export function parseCreateRequest(
  body: unknown,
  now: Date,
  policy: EndpointPolicyOptions = {},
): CreateRequest {
  const data = parseSchema(createRequestSchema, body);
  const missing = missingCredentials(data);
  if (missing.length > 0) throw unprocessable(missing);
  const issues = unknownFields(body as object, CREATE_FIELDS);
  const name = checkName(data.name, issues);
  const location = resolveLocation(
    {
      provider: data.provider,
      bucket: data.bucket,
      region: data.region,
      endpoint: data.endpoint,
      pathPrefix: data.pathPrefix,
    },
    issues,
    policy,
  );
  const encryption = resolveEncryption(data.provider, data.serverSideEncryption, data.kmsKeyId, issues);
  if (encryption !== null) location.encryption = encryption;
  const credentials = checkCreateCredentials(data, location, issues);
  const datasets = checkDatasets(data.datasets ?? DEFAULT_DATASETS, issues);
  const startFrom = checkStartFrom(data.startFrom, now, issues);
  const fileFormat = checkFileFormat(data.format, data.compression, issues);
  const frequency = data.frequency ?? DEFAULT_FREQUENCY;
  const layout = data.layout ?? 'date';
  const schedule = data.schedule ?? null;
  issues.push(...scheduleIssues({ layout, frequency, datasets, schedule }));
  const childOrganizations = checkChildOrganizations(data.childOrganizations ?? [], issues);
  if (issues.length > 0) throw invalidInput(issues);
  return {
    childOrganizations,
    name,
    location,
    credentials,
    datasets,
    frequency,
    startFrom,
    fileFormat,
    layout,
    schedule,
  };
}

/**
 * Validates a PATCH body (already parsed JSON): field by field, with `accessKeyId` and `secretAccessKey` only
 * together and at least one field. The location is checked as a whole by {@link resolveUpdatedLocation}
 * once merged with the stored destination.
 */
export function parseUpdateRequest(body: unknown): UpdateRequest {
  const data = parseSchema(updateRequestSchema, body);
  const issues = unknownFields(body as object, UPDATE_FIELDS);
  const update: UpdateRequest = {};
  if (data.name !== undefined) update.name = checkName(data.name, issues);
  if (data.bucket !== undefined) update.bucket = data.bucket;
  if (data.region !== undefined) update.region = data.region;
  if (data.endpoint !== undefined) update.endpoint = data.endpoint;
  if (data.pathPrefix !== undefined) update.pathPrefix = data.pathPrefix ?? '';
  const hasId = data.accessKeyId !== undefined;
  const hasSecret = data.secretAccessKey !== undefined;
  if (hasId !== hasSecret) {
    issues.push({
      path: hasId ? 'secretAccessKey' : 'accessKeyId',
      message: 'accessKeyId and secretAccessKey must be sent together.',
    });
  } else if (hasId && hasSecret) {
    update.credentials = checkCredentials(data.accessKeyId ?? '', data.secretAccessKey ?? '', issues);
  }
  if (data.roleArn !== undefined) {
    if (hasId || hasSecret) {
      issues.push({
        path: 'roleArn',
        message: 'Send either roleArn or accessKeyId and secretAccessKey, not both.',
      });
    }
    update.roleArn = checkRoleArn(data.roleArn, issues);
  }
  if (data.datasets !== undefined) update.datasets = checkDatasets(data.datasets, issues);
  if (data.frequency !== undefined) update.frequency = data.frequency;
  if (data.isEnabled !== undefined) update.isEnabled = data.isEnabled;
  if (data.format !== undefined) update.format = data.format;
  if (data.compression !== undefined) update.compression = data.compression;
  if (data.layout !== undefined) update.layout = data.layout;
  if (data.schedule !== undefined) update.schedule = data.schedule;
  if (data.serverSideEncryption !== undefined) update.serverSideEncryption = data.serverSideEncryption;
  if (data.kmsKeyId !== undefined) update.kmsKeyId = data.kmsKeyId;
  if (data.childOrganizations !== undefined) {
    update.childOrganizations = checkChildOrganizations(data.childOrganizations, issues);
  }
  if (issues.length === 0 && Object.keys(data).length === 0) {
    issues.push({ path: '', message: 'Send at least one field to change.', allowedValues: UPDATE_FIELDS });
  }
  if (issues.length > 0) throw invalidInput(issues);
  return update;
}

/**
 * `format` and `compression` as one file format: JSON lines are gzip only, Parquet snappy (the default) or
 * zstd. Pushes an issue and returns JSON lines when the pair is not allowed.
 */
function checkFileFormat(
  format: ExportFormat | undefined,
  compression: Compression | undefined,
  issues: InputIssue[],
): FileFormat {
  const fileFormat = requestedFileFormat(format, compression);
  if (fileFormat !== undefined) return fileFormat;
  const parquet = format === 'parquet';
  issues.push({
    path: 'compression',
    message: parquet
      ? 'Parquet files are compressed with snappy or zstd.'
      : 'JSON lines files are compressed with gzip; snappy and zstd are for format parquet.',
    allowedValues: parquet ? ['snappy', 'zstd'] : ['gzip'],
  });
  return fileFormatOf(undefined);
}

/**
 * The file format after a PATCH: the format sent (or the stored one) with the compression sent, else the
 * stored compression when the format stays, else the new format's default. Throws `InvalidInputError` for
 * a pair that is not allowed (`compression: zstd` on a JSON lines export).
 */
export function resolveUpdatedFileFormat(stored: FileFormat, update: UpdateRequest): FileFormat {
  const format = update.format ?? stored.format;
  const compression = update.compression ?? (format === stored.format ? stored.compression : undefined);
  const issues: InputIssue[] = [];
  const fileFormat = checkFileFormat(format, compression, issues);
  if (issues.length > 0) throw invalidInput(issues);
  return fileFormat;
}

/**
 * The layout, frequency, datasets and schedule after a PATCH, checked together (`scheduleIssues`): a
 * `run_hour` export stays hourly or daily with event datasets only, a schedule fits its frequency. Throws
 * `InvalidInputError` naming the fields.
 */
export function resolveUpdatedSchedule(
  stored: Pick<Destination, 'layout' | 'frequency' | 'datasets' | 'schedule'>,
  update: UpdateRequest,
): { layout: Layout; schedule: Schedule | null } {
  const layout = update.layout ?? layoutOf(stored);
  const schedule = update.schedule === undefined ? (stored.schedule ?? null) : update.schedule;
  const issues = scheduleIssues({
    layout,
    frequency: update.frequency ?? stored.frequency,
    datasets: update.datasets ?? stored.datasets,
    schedule,
  });
  if (issues.length > 0) throw invalidInput(issues);
  return { layout, schedule };
}

/**
 * Merges a PATCH's location fields into the stored location and checks the result as a whole (region
 * required once an endpoint is cleared, endpoint refused with gcs, ...). Throws `InvalidInputError`.
 */
export function resolveUpdatedLocation(
  stored: BucketLocation,
  update: UpdateRequest,
  policy: EndpointPolicyOptions = {},
): BucketLocation {
  const issues: InputIssue[] = [];
  const location = resolveLocation(
    {
      provider: stored.provider,
      bucket: update.bucket ?? stored.bucket,
      region: update.region === undefined ? stored.region : update.region,
      endpoint: update.endpoint === undefined ? stored.endpoint : update.endpoint,
      pathPrefix: update.pathPrefix ?? stored.pathPrefix,
    },
    issues,
    policy,
  );
  const storedEncryption = stored.encryption ?? null;
  const sseSent = update.serverSideEncryption !== undefined;
  const encryption = resolveEncryption(
    stored.provider,
    sseSent ? update.serverSideEncryption : storedEncryption?.serverSideEncryption,
    update.kmsKeyId !== undefined || sseSent ? update.kmsKeyId : storedEncryption?.kmsKeyId,
    issues,
  );
  if (encryption !== null) location.encryption = encryption;
  if (issues.length > 0) throw invalidInput(issues);
  return location;
}

/** The location fields that decide which host receives requests signed with the destination's key. */
export const SIGNED_LOCATION_FIELDS = [
  'bucket',
  'endpoint',
  'region',
] as const satisfies readonly (keyof BucketLocation)[];

/**
 * Refuses a PATCH that changes where requests go (bucket, endpoint or region) without sending the credentials
 * again: otherwise a caller who never knew the secret could have Sluice sign requests with it, carrying its key
 * id, for a host of the caller's choosing. The path prefix may change alone (same bucket, same host). Throws
 * `InvalidInputError` with one issue per changed field.
 */
export function assertCredentialsForMove(
  stored: BucketLocation & { role?: unknown },
  location: BucketLocation,
  update: UpdateRequest,
): void {
  // A role destination stores no secret: its requests only ever go to Amazon S3, signed by the role.
  if (update.credentials !== undefined || stored.role) return;
  const changed = SIGNED_LOCATION_FIELDS.filter((field) => location[field] !== stored[field]);
  if (changed.length === 0) return;
  throw invalidInput(
    changed.map((field) => ({
      path: field,
      message: `Changing ${field} requires the credentials again: send accessKeyId and secretAccessKey with it. The stored secret is only used where it was given.`,
    })),
  );
}

/**
 * Refuses a PATCH whose credentials do not fit the destination: a role destination keeps a role (a new
 * `roleArn`, the same external ID) and stays on Amazon S3; a key destination keeps keys. Switching between the
 * two ways is a new export. Throws `InvalidInputError`.
 */
export function assertCredentialsFit(
  stored: { role?: unknown },
  location: BucketLocation,
  update: UpdateRequest,
): void {
  const issues: InputIssue[] = [];
  if (stored.role) {
    if (update.credentials !== undefined) {
      issues.push({
        path: 'accessKeyId',
        message:
          'This export assumes an IAM role: send roleArn to change the role. To use an access key instead, create a new export.',
      });
    }
    checkRoleProvider(location, issues);
  } else if (update.roleArn !== undefined) {
    issues.push({
      path: 'roleArn',
      message:
        'This export uses an access key: send accessKeyId and secretAccessKey to rotate it. To use an IAM role instead, create a new export.',
    });
  }
  if (issues.length > 0) throw invalidInput(issues);
}

/** The `nextToken` of a runs page that has (or may have) more after it: the last run listed, opaque. */
export function encodeRunsToken(run: RunsPageToken): string {
  return Buffer.from(JSON.stringify({ s: run.startedAt, i: run.id }), 'utf8').toString('base64url');
}

/** Parses the `nextToken` query parameter of the runs list (absent: the first page). */
export function parseRunsToken(raw: string | undefined): RunsPageToken | undefined {
  if (raw === undefined || raw === '') return undefined;
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    decoded = undefined;
  }
  const { s: startedAt, i: id } = (decoded ?? {}) as { s?: unknown; i?: unknown };
  if (
    typeof startedAt !== 'string' ||
    typeof id !== 'string' ||
    !z.iso.datetime().safeParse(startedAt).success ||
    !isKeySafeId(id)
  ) {
    throw invalidInput([
      {
        path: 'nextToken',
        message: 'nextToken is not one this API returned: send the nextToken of the previous page.',
      },
    ]);
  }
  return { startedAt, id };
}

/** Parses the `limit` query parameter of the runs list: an integer 1-100, default 20. */
export function parseRunsLimit(raw: string | undefined): number {
  if (raw === undefined || raw === '') return RUNS_LIMIT.default;
  const limit = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isInteger(limit) || limit < RUNS_LIMIT.min || limit > RUNS_LIMIT.max) {
    throw invalidInput([
      { path: 'limit', message: `limit must be an integer from ${RUNS_LIMIT.min} to ${RUNS_LIMIT.max}.` },
    ]);
  }
  return limit;
}
