/**
 * What the console says about an export's options: human labels for the API's enum values, help text per
 * field, the minimal bucket policy for the chosen options, and the form's own checks in the console's words.
 * Pure: no DOM, so it is unit-tested beside the console (`options.test.ts`).
 */

/** Human labels of the API's enum values; a value without one is shown as it is. */
export const LABELS: Record<string, Record<string, string>> = {
  provider: { s3: 'Amazon S3 or S3-compatible', gcs: 'Google Cloud Storage (HMAC keys)' },
  frequency: {
    every_5_minutes: 'Every 5 minutes',
    every_15_minutes: 'Every 15 minutes',
    hourly: 'Hourly',
    daily: 'Daily',
  },
  format: { jsonl: 'JSON lines', parquet: 'Parquet' },
  compression: { gzip: 'gzip', snappy: 'Snappy', zstd: 'Zstandard' },
  serverSideEncryption: {
    '': "Bucket's default",
    AES256: 'S3-managed keys (AES256)',
    'aws:kms': 'AWS KMS key',
  },
  status: { idle: 'Idle', queued: 'Queued', running: 'Running', failed: 'Failed', succeeded: 'Succeeded' },
  dataset: {
    email_events: 'Email events',
    sms_events: 'SMS events',
    custom_events: 'Custom events',
    subscribers: 'Subscribers (daily snapshot)',
    message_events: 'Message events',
    project_summary: 'Project summaries',
    opt_out_events: 'Opt-out events',
    click_events: 'Click events',
  },
  /** `failing.reason`: why the export's runs fail, as the banner says it. */
  failingReason: {
    no_such_bucket: 'the bucket does not exist',
    invalid_bucket_name: 'the bucket name is not valid',
    access_denied: 'access is denied',
    wrong_region: 'the region is wrong',
    invalid_access_key: 'the access key id is not valid',
    role_not_assumable: 'the role cannot be assumed',
    signature_mismatch: 'the secret access key is wrong',
    unsafe_endpoint: 'the endpoint is not allowed',
    redirected: 'the store redirects',
    tls_error: 'the TLS connection fails',
    not_supported: 'the store does not support a request Sluice makes',
    endpoint_unreachable: 'the endpoint cannot be reached',
    secret_rejected: 'the stored secret no longer opens: give the credentials again',
    invalid_location: 'the bucket settings are not valid',
    unknown: 'an error the store did not explain',
  },
  childOrganizations: { '*': 'All current and future child organisations' },
  layout: {
    date: 'Date folders (date=YYYY-MM-DD)',
    run_hour: 'Run-hour folders (year/month/day/hour)',
  },
};

/** The label of `value` among the values of `kind` (`frequency`, `format` …). */
export function label(kind: string, value: string | null | undefined): string {
  const key = value ?? '';
  return LABELS[kind]?.[key] ?? key;
}

/** The compressions a format can be written with; the first is the API's default. */
export function compressionsOf(format: string): readonly string[] {
  return format === 'parquet' ? ['snappy', 'zstd'] : ['gzip'];
}

/** Help text under each field of the create and edit form. */
export const HELP: Record<string, string> = {
  provider: 'S3 also covers S3-compatible stores (R2, MinIO, Backblaze) with an endpoint.',
  bucket: 'The bucket name only, such as acme-exports (not s3://… or a URL).',
  region: 'Required for Amazon S3 without an endpoint, such as us-east-1.',
  endpoint: 'HTTPS origin of an S3-compatible store, such as https://<account>.r2.cloudflarestorage.com.',
  pathPrefix: 'Folder inside the bucket; the layout below sets the folders under it.',
  accessKeyId: 'A key allowed to write under the prefix (the policy below). Or use a role instead.',
  secretAccessKey: 'Stored encrypted, never shown again.',
  roleArn:
    'Amazon S3 only, instead of keys: an IAM role Sluice assumes. Its trust policy must require the external ID shown on the export.',
  format: 'JSON lines (one object a line) or Parquet (columns, for warehouses).',
  compression: 'JSON lines are always gzip; Parquet is Snappy (default) or Zstandard.',
  serverSideEncryption:
    'Amazon S3 only. Asks S3 to encrypt every object; the bucket default applies otherwise.',
  kmsKeyId: 'With AWS KMS: the key id, ARN or alias; empty for the bucket default KMS key.',
  datasets: 'Events are written in windows of the frequency; subscribers as one snapshot per UTC day.',
  frequency: 'How often it runs, and the size of its event windows.',
  startFrom: 'ISO 8601 UTC time the event datasets start from (at most 30 days back); empty: now.',
  layout:
    'Date folders: <prefix>/<dataset>/date=YYYY-MM-DD/, 50,000 rows a file, any frequency and dataset. Run-hour folders: <prefix>/v1/schema_type=<dataset>/year=…/month=…/day=…/hour=HH/ of each scheduled run, 100,000 rows a file; hourly or daily, event datasets only (no subscribers). A change applies from the next window.',
  childOrganizations:
    "Also export the data of these child workspaces, each row with the organisation it belongs to. All current and future: children linked later are included from when they are linked. Unticked: this workspace's own data only.",
  schedule:
    'Hourly and daily exports only, in UTC: the minute of every hour, or the hour and minute of every day. Empty: a minute Sluice picks for this export. A change applies after the run already planned.',
};

/** `childOrganizations: ["*"]`: every current and future child of the export's workspace. */
export const ALL_CHILDREN = '*';

/** An export's child organisations, for people. */
export function childrenLabel(list: readonly string[] | null | undefined): string {
  if (!list || list.length === 0) return "None: this workspace's own data only";
  if (list.includes(ALL_CHILDREN)) return label('childOrganizations', ALL_CHILDREN);
  return list.join(', ');
}

/** True when two `childOrganizations` lists name the same organisations, in any order. */
export function sameChildren(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((id) => b.includes(id));
}

/** The frequencies that take a schedule, and that the run-hour layout runs at (the API's rule). */
export const SCHEDULED_FREQUENCIES: readonly string[] = ['hourly', 'daily'];

/** `schedule` of an export, as the API takes and shows it. */
export interface Schedule {
  minute: number;
  hour?: number;
}

const two = (n: number) => String(n).padStart(2, '0');

/**
 * The schedule the form's two inputs give for `frequency`: null when both are empty (or the frequency takes
 * none, its inputs then off), else the minute (and the hour, daily), or the problems in the console's words.
 */
export function readSchedule(
  frequency: string,
  hourText: string,
  minuteText: string,
): { schedule: Schedule | null; issues: FormIssue[] } {
  const hour = hourText.trim();
  const minute = minuteText.trim();
  const daily = frequency === 'daily';
  if (!SCHEDULED_FREQUENCIES.includes(frequency) || (minute === '' && (hour === '' || !daily))) {
    return { schedule: null, issues: [] };
  }
  const issues: FormIssue[] = [];
  const whole = (text: string, max: number) =>
    /^\d{1,2}$/.test(text) && Number(text) <= max ? Number(text) : undefined;
  if (daily && (hour === '' || minute === '')) {
    issues.push({
      path: 'schedule',
      message: 'Enter both the hour and the minute, or leave both empty for a time Sluice picks.',
    });
    return { schedule: null, issues };
  }
  const m = whole(minute, 59);
  if (m === undefined)
    issues.push({ path: 'schedule', message: 'Enter the minute as a number from 0 to 59.' });
  const hr = daily ? whole(hour, 23) : undefined;
  if (daily && hr === undefined)
    issues.push({ path: 'schedule', message: 'Enter the hour as a number from 0 to 23 (UTC).' });
  if (issues.length > 0 || m === undefined) return { schedule: null, issues };
  return { schedule: hr === undefined ? { minute: m } : { hour: hr, minute: m }, issues };
}

/** True when two schedules (or their absence) give the same run times. */
export function sameSchedule(a: Schedule | null | undefined, b: Schedule | null | undefined): boolean {
  return (a ?? null) === (b ?? null) || (!!a && !!b && a.minute === b.minute && a.hour === b.hour);
}

/** `Every hour at minute 05`, `Every day at 08:00 UTC`, or the time Sluice picks: a schedule for people. */
export function scheduleLabel(frequency: string, schedule: Schedule | null | undefined): string {
  if (!SCHEDULED_FREQUENCIES.includes(frequency))
    return `${label('frequency', frequency)}, at minutes Sluice picks`;
  if (!schedule) return `${label('frequency', frequency)}, at a minute Sluice picks for this export`;
  if (frequency === 'daily') return `Every day at ${two(schedule.hour ?? 0)}:${two(schedule.minute)} UTC`;
  return `Every hour at minute ${two(schedule.minute)} (UTC)`;
}

/** The first run of `schedule` strictly after `nowMs` (epoch ms), as the API plans it: hourly or daily. */
export function nextScheduledRun(frequency: string, schedule: Schedule, nowMs: number): number {
  const period = frequency === 'daily' ? 86_400_000 : 3_600_000;
  const offset = ((frequency === 'daily' ? (schedule.hour ?? 0) * 60 : 0) + schedule.minute) * 60_000;
  return Math.floor((nowMs - offset) / period) * period + offset + period;
}

/** What {@link minimalPolicy} needs from the form. */
export interface PolicyOptions {
  bucket: string;
  pathPrefix: string;
  serverSideEncryption: string;
  kmsKeyId: string;
}

/**
 * The least an S3 key or role needs (docs/customer-buckets.md): write and abort uploads under the prefix, read
 * the lifecycle configuration (optional: it lets the connection test check for the abort rule), and with a
 * KMS key, GenerateDataKey and Decrypt on it. As the JSON to paste into IAM.
 */
export function minimalPolicy(options: PolicyOptions): string {
  const bucket = options.bucket.trim() || '<bucket>';
  const prefix = options.pathPrefix.trim().replace(/^\/+|\/+$/g, '');
  const statements: Record<string, unknown>[] = [
    {
      Effect: 'Allow',
      Action: ['s3:PutObject', 's3:AbortMultipartUpload'],
      Resource: `arn:aws:s3:::${bucket}/${prefix ? `${prefix}/` : ''}*`,
    },
    { Effect: 'Allow', Action: 's3:GetLifecycleConfiguration', Resource: `arn:aws:s3:::${bucket}` },
  ];
  if (options.serverSideEncryption === 'aws:kms') {
    const key = options.kmsKeyId.trim();
    statements.push({
      Effect: 'Allow',
      Action: ['kms:GenerateDataKey', 'kms:Decrypt'],
      Resource: key.startsWith('arn:') ? key : 'arn:aws:kms:<region>:<account>:key/<key-id>',
    });
  }
  return JSON.stringify({ Version: '2012-10-17', Statement: statements }, null, 2);
}

/** A problem the form finds itself, in its words, beside the field `path` names. */
export interface FormIssue {
  path: string;
  message: string;
}

/**
 * The form's own checks, all at once, before anything is sent: what a person most often gets wrong. The API
 * checks everything again; its issues are shown the same way.
 */
export function checkExportForm(body: Record<string, unknown>, creating: boolean): FormIssue[] {
  const issues: FormIssue[] = [];
  const text = (name: string) => (typeof body[name] === 'string' ? (body[name] as string) : '');
  if (creating && text('name') === '') issues.push({ path: 'name', message: 'Give the export a name.' });
  const bucket = text('bucket');
  if (creating && bucket === '') issues.push({ path: 'bucket', message: 'Enter the bucket name.' });
  else if (/^[a-z0-9+.-]+:\/\//i.test(bucket) || bucket.includes('/'))
    issues.push({
      path: 'bucket',
      message: `Enter the bucket name alone, such as ${bucket.replace(/^[a-z0-9+.-]+:\/\//i, '').split('/')[0] || 'acme-exports'}; put the folder in Path prefix.`,
    });
  const endpoint = text('endpoint');
  if (endpoint !== '' && !/^https?:\/\//i.test(endpoint))
    issues.push({ path: 'endpoint', message: 'Enter an origin such as https://s3.example.com.' });
  const role = text('roleArn');
  const key = text('accessKeyId');
  const secret = text('secretAccessKey');
  if (role !== '' && (key !== '' || secret !== ''))
    issues.push({ path: 'roleArn', message: 'Use either a role or an access key, not both.' });
  else if (creating && role === '' && (key === '' || secret === ''))
    issues.push({
      path: key === '' ? 'accessKeyId' : 'secretAccessKey',
      message: 'Enter an access key id and its secret, or a role instead.',
    });
  else if (!creating && (key === '') !== (secret === ''))
    issues.push({
      path: key === '' ? 'accessKeyId' : 'secretAccessKey',
      message: 'Give both the access key id and its secret to replace them.',
    });
  if (role !== '' && !/^arn:aws[\w-]*:iam::\d{12}:role\//.test(role))
    issues.push({
      path: 'roleArn',
      message: 'Enter a role ARN such as arn:aws:iam::111122223333:role/sluice.',
    });
  if (Array.isArray(body.datasets) && body.datasets.length === 0)
    issues.push({ path: 'datasets', message: 'Choose at least one dataset.' });
  if (text('kmsKeyId') !== '' && body.serverSideEncryption !== 'aws:kms')
    issues.push({ path: 'kmsKeyId', message: 'A KMS key needs the encryption set to AWS KMS key.' });
  const startFrom = text('startFrom');
  if (startFrom !== '' && !Number.isFinite(Date.parse(startFrom)))
    issues.push({ path: 'startFrom', message: 'Enter an ISO 8601 UTC time such as 2026-12-01T00:00:00Z.' });
  if (body.layout === 'run_hour') {
    if (!SCHEDULED_FREQUENCIES.includes(text('frequency')))
      issues.push({
        path: 'frequency',
        message: 'Run-hour folders are written hourly or daily: choose Hourly or Daily, or Date folders.',
      });
    if (Array.isArray(body.datasets) && body.datasets.includes('subscribers'))
      issues.push({
        path: 'datasets',
        message:
          'Subscribers are a daily snapshot, written in date folders only: untick them, or choose Date folders.',
      });
  }
  return issues;
}

/** The location fields a key (not role) export signs its requests for: a new value needs the keys again. */
const SIGNED_FIELDS = ['bucket', 'endpoint', 'region'] as const;

/**
 * The edit form's check of a move: a new bucket, endpoint or region of an export with keys needs the keys again
 * (the stored secret is only ever sent where it was given). `changes` is the update's body.
 */
export function checkMove(changes: Record<string, unknown>, usesRole: boolean): FormIssue[] {
  if (usesRole || changes.accessKeyId !== undefined) return [];
  return SIGNED_FIELDS.filter((name) => changes[name] !== undefined).map((path) => ({
    path,
    message: `A new ${path} needs the access key id and secret again: the stored secret is only used where it was given.`,
  }));
}

/** `3 minutes ago`, `2 hours ago`, `just now`: how long ago `iso` was at `nowMs`. */
export function timeAgo(iso: string, nowMs: number): string {
  const seconds = Math.max(0, Math.round((nowMs - Date.parse(iso)) / 1000));
  if (seconds < 60) return 'just now';
  const [amount, unit] =
    seconds < 3600
      ? [Math.floor(seconds / 60), 'minute']
      : seconds < 86_400
        ? [Math.floor(seconds / 3600), 'hour']
        : [Math.floor(seconds / 86_400), 'day'];
  return `${amount} ${unit}${amount === 1 ? '' : 's'} ago`;
}

/**
 * The export's health in a line: `Exported through 3 minutes ago` (the oldest of its datasets' positions),
 * `Not exported yet`, or, while paused, that it is paused.
 */
export function healthLine(
  view: { isEnabled: boolean; exportedThrough: Record<string, string | null | undefined> },
  nowMs: number,
): string {
  const positions = Object.values(view.exportedThrough);
  const paused = view.isEnabled ? '' : 'Paused. ';
  if (positions.length === 0 || positions.some((through) => !through)) return `${paused}Not exported yet`;
  const oldest = positions.map((through) => Date.parse(through as string)).reduce((a, b) => Math.min(a, b));
  return `${paused}Exported through ${timeAgo(new Date(oldest).toISOString(), nowMs)}`;
}
