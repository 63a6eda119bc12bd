import type { Node } from 'constructs';
import { z } from 'zod';

/**
 * Retention periods CloudWatch Logs accepts, in days (`PutRetentionPolicy`); "never expire" is deliberately
 * not offered: logs without an end are a cost nobody decided on.
 */
export const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
] as const;

/** The account used when synthesizing without one (offline synth, CI, tests). Not deployable on purpose. */
export const PLACEHOLDER_ACCOUNT = '111111111111';
/** The region used when synthesizing without one. */
export const PLACEHOLDER_REGION = 'us-east-1';

/** Every context key the app reads, so a typo (`-c logRetention=7`) is refused instead of ignored. */
export const SETTING_KEYS = [
  'stage',
  'domainName',
  'certificateArn',
  'logRetentionDays',
  'eventLogRetentionDays',
  'archiveRetentionDays',
  'writerConcurrency',
  'exportLagAlarmMinutes',
  'ingestLagAlarmMinutes',
  'rejectedEventsAlarmThreshold',
  'restoredTables',
  'alarmEmail',
  'corsOrigins',
  'producerAccounts',
  'apiRateLimit',
  'apiBurstLimit',
  'apiKeyRateLimit',
  'apiKeyBurstLimit',
  'maxExportsPerWorkspace',
  'workflowLogLevel',
  'developmentStages',
  'tracing',
  'reservedConcurrency',
  'maxReadRequestUnits',
  'maxWriteRequestUnits',
  'eventLogPointInTimeRecovery',
  'retainLogGroups',
  'terminationProtection',
  'account',
  'region',
  'sluice:skipBundling',
  'sluice:nag',
] as const;

/** Context values arrive as strings from `-c key=value` and as JSON values from cdk.json: accept both. */
const integer = (name: string) =>
  z.preprocess(
    (value) => (typeof value === 'string' && value.trim() !== '' ? Number(value) : value),
    z.number({ error: `${name} must be a whole number` }).int({ error: `${name} must be a whole number` }),
  );

const flag = z.preprocess(
  (value) => {
    if (value === 'true') return true;
    if (value === 'false') return false;
    return value;
  },
  z.boolean({ error: 'must be true or false' }),
);

const optionalText = z.preprocess((value) => (value === '' ? undefined : value), z.string().optional());

/** `a,b` on the command line, or a JSON array (or object) given as text or in cdk.json: the values. */
function commaListOrJson(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const trimmed = value.trim();
  if (trimmed.startsWith('[') || trimmed.startsWith('{')) {
    try {
      return JSON.parse(trimmed) as unknown;
    } catch {
      return value;
    }
  }
  return trimmed === ''
    ? undefined
    : trimmed
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== '');
}

/**
 * `a=1,b=2` on the command line: an object of the names and their values (trimmed, then `convert`ed); a JSON
 * object or anything else as {@link commaListOrJson} gives it.
 */
function namedValues(value: unknown, convert: (text: string) => unknown): unknown {
  const parsed = commaListOrJson(value);
  if (!Array.isArray(parsed)) return parsed;
  return Object.fromEntries(
    parsed.map((pair) => {
      const [name, text] = String(pair).split('=');
      return [name?.trim() ?? '', convert(text?.trim() ?? '')];
    }),
  );
}

/** `https://a.example,https://b.example` on the command line, or a JSON array in cdk.json. */
const origins = z.preprocess(
  commaListOrJson,
  z
    .array(
      z.string().refine((origin) => origin === '*' || /^https?:\/\/[a-z0-9.-]+(:\d{1,5})?$/i.test(origin), {
        error: (issue) =>
          `"${String(issue.input)}" is not an origin like https://app.example.com (no path, no slash)`,
      }),
    )
    .min(1, { error: 'give at least one origin, or leave corsOrigins unset to keep CORS off' })
    .optional(),
);

/** The functions of the stateless stack, by the names `reservedConcurrency` uses. */
export const FUNCTION_NAMES = [
  'api',
  'authorizer',
  'ingest',
  'runControl',
  'writer',
  'dispatch',
  'archive',
] as const;
/** One of {@link FUNCTION_NAMES}. */
export type FunctionName = (typeof FUNCTION_NAMES)[number];

/** `111111111111,222222222222` or a JSON array: the accounts allowed to put events on the bus. */
const accounts = z.preprocess(
  commaListOrJson,
  z
    .array(
      z.string().regex(/^\d{12}$/, {
        error: (issue) => `"${String(issue.input)}" is not a 12-digit AWS account id`,
      }),
    )
    .optional(),
);

/** `writer=50,ingest=10` on the command line, or a JSON object: reserved concurrency per function. */
const concurrencyMap = z.preprocess(
  (value) => namedValues(value, (count) => (count === '' ? Number.NaN : Number(count))),
  z
    .record(
      z.string(),
      z
        .number({ error: 'reservedConcurrency values must be whole numbers' })
        .int({ error: 'reservedConcurrency values must be whole numbers' })
        .min(0)
        .max(10_000),
    )
    .refine((map) => Object.keys(map).every((name) => (FUNCTION_NAMES as readonly string[]).includes(name)), {
      error: `reservedConcurrency names functions: ${FUNCTION_NAMES.join(', ')}`,
    })
    .optional(),
);

/** The tables of the stateful stack, by the names `restoredTables` uses. */
export const TABLE_NAMES = ['control', 'events', 'subscribers'] as const;
/** One of {@link TABLE_NAMES}. */
export type TableName = (typeof TABLE_NAMES)[number];
/** Restored tables by {@link TableName}: the DynamoDB table names a restore created. */
export type RestoredTables = Readonly<Partial<Record<TableName, string>>>;

/**
 * `control=sluice-prod-control-0612,events=...` on the command line, or a JSON object in cdk.json: the tables
 * a restore created (DynamoDB names: 3-255 of a-z, A-Z, 0-9, `_`, `-`, `.`).
 */
const restoredTables = z.preprocess(
  (value) => namedValues(value, (table) => table),
  z
    .record(
      z.string(),
      z.string().regex(/^[A-Za-z0-9_.-]{3,255}$/, {
        error: (issue) => `restoredTables: "${String(issue.input)}" is not a DynamoDB table name`,
      }),
    )
    .refine((map) => Object.keys(map).every((name) => (TABLE_NAMES as readonly string[]).includes(name)), {
      error: `restoredTables names tables: ${TABLE_NAMES.join(', ')}`,
    })
    .optional(),
);

/**
 * `4000` (every table), `events=4000,control=500` on the command line, or a JSON number or object: the
 * on-demand request units a second each table (and its indexes) may use at most.
 */
const capacityCaps = (name: string) =>
  z.preprocess(
    (value) => {
      if (typeof value === 'number') return Object.fromEntries(TABLE_NAMES.map((table) => [table, value]));
      if (typeof value === 'string' && /^\s*\d+\s*$/.test(value)) {
        return Object.fromEntries(TABLE_NAMES.map((table) => [table, Number(value)]));
      }
      return namedValues(value, (units) => (units === '' ? Number.NaN : Number(units)));
    },
    z
      .record(
        z.string(),
        z
          .number({ error: `${name} values must be whole numbers` })
          .int({ error: `${name} values must be whole numbers` })
          .min(1, { error: `${name} must be at least 1` }),
      )
      .refine(
        (map) => Object.keys(map).every((table) => (TABLE_NAMES as readonly string[]).includes(table)),
        {
          error: `${name} is a number for every table, or names tables: ${TABLE_NAMES.join(', ')}`,
        },
      )
      .optional(),
  );

/** Capacity caps by {@link TableName}: on-demand request units a second; a table not named has no cap. */
export type CapacityCaps = Readonly<Partial<Record<TableName, number>>>;

/** The stages whose workflows log every transition unless `workflowLogLevel` says otherwise. */
export const DEFAULT_DEVELOPMENT_STAGES = ['dev'] as const;

/** Step Functions log levels a Sluice state machine may use. */
export const WORKFLOW_LOG_LEVELS = ['ALL', 'ERROR', 'FATAL', 'OFF'] as const;

const settingsSchema = z
  .object({
    stage: z
      .string()
      .regex(/^[a-z0-9](?:[a-z0-9-]{0,18}[a-z0-9])?$/, {
        error:
          'stage must be 1-20 characters of a-z, 0-9 and "-", starting and ending with a letter or digit',
      })
      .default('dev'),
    domainName: optionalText.pipe(
      z
        .string()
        .regex(/^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/, {
          error: 'domainName must be a lower-case DNS name like exports.example.com',
        })
        .optional(),
    ),
    certificateArn: optionalText.pipe(
      z
        .string()
        .regex(/^arn:aws[a-z-]*:acm:[a-z0-9-]+:\d{12}:certificate\/[0-9a-f-]+$/, {
          error:
            'certificateArn must be an ACM certificate ARN (arn:aws:acm:<region>:<account>:certificate/<id>)',
        })
        .optional(),
    ),
    logRetentionDays: integer('logRetentionDays')
      .refine((days) => (LOG_RETENTION_DAYS as readonly number[]).includes(days), {
        error: `logRetentionDays must be one of the CloudWatch Logs values: ${LOG_RETENTION_DAYS.join(', ')}`,
      })
      .default(30),
    eventLogRetentionDays: integer('eventLogRetentionDays')
      .refine((days) => days >= 1 && days <= 3653, {
        error:
          'eventLogRetentionDays must be 1-3653: the event archive keeps rows after that (its compaction runs every 15 minutes)',
      })
      .default(35),
    archiveRetentionDays: integer('archiveRetentionDays')
      .refine((days) => days >= 91 && days <= 3653, {
        error:
          'archiveRetentionDays must be 91-3653 (objects move to Glacier Instant Retrieval after 90 days)',
      })
      .default(731),
    writerConcurrency: integer('writerConcurrency')
      .refine((n) => n >= 1 && n <= 40, {
        error: 'writerConcurrency must be 1-40 (the inline Map runs at most 40 iterations at once)',
      })
      .default(10),
    exportLagAlarmMinutes: integer('exportLagAlarmMinutes')
      .refine((n) => n >= 5 && n <= 10_080, { error: 'exportLagAlarmMinutes must be 5-10080 (a week)' })
      .default(60),
    ingestLagAlarmMinutes: integer('ingestLagAlarmMinutes')
      .refine((n) => n >= 1 && n <= 360, {
        error: 'ingestLagAlarmMinutes must be 1-360 (Lambda gives up on an ingest event after 6 hours)',
      })
      .default(15),
    rejectedEventsAlarmThreshold: integer('rejectedEventsAlarmThreshold')
      .refine((n) => n >= 1, { error: 'rejectedEventsAlarmThreshold must be at least 1' })
      .default(10),
    restoredTables,
    alarmEmail: optionalText.pipe(z.email({ error: 'alarmEmail must be an e-mail address' }).optional()),
    corsOrigins: origins,
    producerAccounts: accounts,
    apiRateLimit: integer('apiRateLimit')
      .refine((n) => n >= 1 && n <= 10_000, { error: 'apiRateLimit must be 1-10000 requests per second' })
      .default(50),
    apiBurstLimit: integer('apiBurstLimit')
      .refine((n) => n >= 1 && n <= 5_000, { error: 'apiBurstLimit must be 1-5000 requests' })
      .optional(),
    apiKeyRateLimit: integer('apiKeyRateLimit')
      .refine((n) => n >= 1 && n <= 1_000, {
        error: 'apiKeyRateLimit must be 1-1000 requests per second for each API key',
      })
      .default(10),
    apiKeyBurstLimit: integer('apiKeyBurstLimit')
      .refine((n) => n >= 1 && n <= 5_000, { error: 'apiKeyBurstLimit must be 1-5000 requests' })
      .default(40),
    maxExportsPerWorkspace: integer('maxExportsPerWorkspace')
      .refine((n) => n >= 1 && n <= 10_000, { error: 'maxExportsPerWorkspace must be 1-10000 data exports' })
      .default(100),
    workflowLogLevel: optionalText.pipe(
      z
        .enum(WORKFLOW_LOG_LEVELS, {
          error: `workflowLogLevel must be one of ${WORKFLOW_LOG_LEVELS.join(', ')}`,
        })
        .optional(),
    ),
    developmentStages: z.preprocess(
      commaListOrJson,
      z.array(z.string({ error: 'developmentStages lists stage names' })).optional(),
    ),
    tracing: flag.default(true),
    reservedConcurrency: concurrencyMap,
    maxReadRequestUnits: capacityCaps('maxReadRequestUnits'),
    maxWriteRequestUnits: capacityCaps('maxWriteRequestUnits'),
    eventLogPointInTimeRecovery: flag.default(true),
    retainLogGroups: flag.default(false),
    terminationProtection: flag.default(true),
    account: optionalText.pipe(
      z
        .string()
        .regex(/^\d{12}$/, { error: 'account must be a 12-digit AWS account id' })
        .optional(),
    ),
    region: optionalText.pipe(
      z
        .string()
        .regex(/^[a-z]{2}(-[a-z]+)+-\d$/, { error: 'region must be an AWS region like eu-west-1' })
        .optional(),
    ),
    'sluice:skipBundling': flag.default(false),
    'sluice:nag': flag.default(false),
  })
  .superRefine((settings, ctx) => {
    if (settings.apiBurstLimit !== undefined && settings.apiBurstLimit < settings.apiRateLimit) {
      ctx.addIssue({
        code: 'custom',
        path: ['apiBurstLimit'],
        message: 'apiBurstLimit must be at least apiRateLimit',
      });
    }
    if ((settings.domainName === undefined) !== (settings.certificateArn === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: [settings.domainName === undefined ? 'domainName' : 'certificateArn'],
        message: 'domainName and certificateArn go together: give both for a custom domain, or neither',
      });
    }
  });

/** The deployment's settings, validated. */
export interface SluiceSettings {
  /** Names the stacks (`Sluice-<stage>-Stateful`) and tags every resource. @default 'dev' */
  readonly stage: string;
  /** Custom domain of the API, with {@link certificateArn}. @default - the execute-api URL only */
  readonly domainName?: string;
  /** ACM certificate (same region) for {@link domainName}. */
  readonly certificateArn?: string;
  /** Retention of every Lambda, access and Step Functions log group. @default 30 */
  readonly logRetentionDays: number;
  /** Days an event stays in the hot event log (DynamoDB TTL); the event archive keeps it after. @default 35 */
  readonly eventLogRetentionDays: number;
  /** Days an object stays in the event archive bucket (lifecycle expiration). @default 731 (two years) */
  readonly archiveRetentionDays: number;
  /** Writers running at once in one export run (the inline Map's MaxConcurrency). @default 10 */
  readonly writerConcurrency: number;
  /** Export lag, in minutes, over which the lag alarm fires. @default 60 */
  readonly exportLagAlarmMinutes: number;
  /** Ingest lag (now minus when the producer sent the bus event), in minutes, over which its alarm fires. @default 15 */
  readonly ingestLagAlarmMinutes: number;
  /** Rejected events and envelopes, all workspaces, in 5 minutes, at which their alarm fires. @default 10 */
  readonly rejectedEventsAlarmThreshold: number;
  /** Tables a restore created, used in place of the stack's own (docs/runbook.md). @default - none */
  readonly restoredTables: RestoredTables;
  /** Subscribed to the alarm topic when given. */
  readonly alarmEmail?: string;
  /** Browser origins allowed by CORS. @default - CORS off */
  readonly corsOrigins?: readonly string[];
  /** Other accounts allowed to put events on the bus (the bus policy names them). @default - this account only */
  readonly producerAccounts: readonly string[];
  /** Steady requests per second of the API stage. @default 50 */
  readonly apiRateLimit: number;
  /** Burst of the API stage. @default - 100, or apiRateLimit when that is higher */
  readonly apiBurstLimit: number;
  /** Steady requests per second of each API key (the API answers 429 past it). @default 10 */
  readonly apiKeyRateLimit: number;
  /** Requests each API key may send at once after a quiet spell. @default 40 */
  readonly apiKeyBurstLimit: number;
  /** The most data exports a workspace may have (a create beyond it is 409 limit_exceeded). @default 100 */
  readonly maxExportsPerWorkspace: number;
  /**
   * Log level of both state machines. @default - 'ALL' in a stage of {@link developmentStages}, else 'ERROR'
   */
  readonly workflowLogLevel: (typeof WORKFLOW_LOG_LEVELS)[number];
  /** The stages treated as development stages (workflow log level `ALL` by default). @default ['dev'] */
  readonly developmentStages: readonly string[];
  /** X-Ray active tracing on every function and both state machines. @default true */
  readonly tracing: boolean;
  /** Reserved concurrency per function. @default - none reserved */
  readonly reservedConcurrency: Readonly<Partial<Record<FunctionName, number>>>;
  /** On-demand read request units a second per table (its indexes the same). @default - no cap */
  readonly maxReadRequestUnits: CapacityCaps;
  /** On-demand write request units a second per table (its indexes the same). @default - no cap */
  readonly maxWriteRequestUnits: CapacityCaps;
  /** Point-in-time recovery of the event log table (the control and subscribers tables always have it). @default true */
  readonly eventLogPointInTimeRecovery: boolean;
  /** Keep the log groups when their stack is deleted (`RETAIN`) instead of deleting them. @default false */
  readonly retainLogGroups: boolean;
  /** Termination protection on the stateful stack. @default true */
  readonly terminationProtection: boolean;
  /** Target account. @default - CDK_DEFAULT_ACCOUNT, else {@link PLACEHOLDER_ACCOUNT} */
  readonly account: string;
  /** Target region. @default - CDK_DEFAULT_REGION, else {@link PLACEHOLDER_REGION} */
  readonly region: string;
  /** True when the account is the placeholder: synth works, deploy is refused by the CLI. */
  readonly placeholderEnv: boolean;
  /** Package Lambda code as an inline placeholder instead of bundling with esbuild (tests). @default false */
  readonly skipBundling: boolean;
  /** Run cdk-nag AwsSolutionsChecks during synth. @default false */
  readonly nag: boolean;
}

/** Thrown for context values that fail validation; the message lists every problem. */
export class SettingsError extends Error {
  /** One line per invalid setting: `<key>: <what is wrong>`. */
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(`Invalid Sluice settings (CDK context):\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'SettingsError';
    this.problems = problems;
  }
}

/**
 * Validates raw context values into {@link SluiceSettings}.
 *
 * @param raw the context values (strings from `-c`, JSON values from cdk.json)
 * @param env where `CDK_DEFAULT_ACCOUNT`/`CDK_DEFAULT_REGION` are read when account/region are not given
 * @throws SettingsError naming every invalid key
 */
export function parseSettings(
  raw: Readonly<Record<string, unknown>>,
  env: Readonly<Record<string, string | undefined>> = process.env,
): SluiceSettings {
  const result = settingsSchema.safeParse(raw);
  if (!result.success) {
    throw new SettingsError(
      result.error.issues.map(
        (issue) => `${issue.path.map(String).join('.') || 'settings'}: ${issue.message}`,
      ),
    );
  }
  const s = result.data;
  const account = s.account ?? env.CDK_DEFAULT_ACCOUNT ?? PLACEHOLDER_ACCOUNT;
  const region = s.region ?? env.CDK_DEFAULT_REGION ?? PLACEHOLDER_REGION;
  const developmentStages = s.developmentStages ?? [...DEFAULT_DEVELOPMENT_STAGES];
  return {
    stage: s.stage,
    domainName: s.domainName,
    certificateArn: s.certificateArn,
    logRetentionDays: s.logRetentionDays,
    eventLogRetentionDays: s.eventLogRetentionDays,
    archiveRetentionDays: s.archiveRetentionDays,
    writerConcurrency: s.writerConcurrency,
    exportLagAlarmMinutes: s.exportLagAlarmMinutes,
    ingestLagAlarmMinutes: s.ingestLagAlarmMinutes,
    rejectedEventsAlarmThreshold: s.rejectedEventsAlarmThreshold,
    restoredTables: (s.restoredTables ?? {}) as RestoredTables,
    alarmEmail: s.alarmEmail,
    corsOrigins: s.corsOrigins,
    producerAccounts: (s.producerAccounts ?? []).filter((id) => id !== account),
    apiRateLimit: s.apiRateLimit,
    apiBurstLimit: s.apiBurstLimit ?? Math.max(100, s.apiRateLimit),
    apiKeyRateLimit: s.apiKeyRateLimit,
    apiKeyBurstLimit: s.apiKeyBurstLimit,
    maxExportsPerWorkspace: s.maxExportsPerWorkspace,
    workflowLogLevel: s.workflowLogLevel ?? (developmentStages.includes(s.stage) ? 'ALL' : 'ERROR'),
    developmentStages,
    tracing: s.tracing,
    reservedConcurrency: (s.reservedConcurrency ?? {}) as Partial<Record<FunctionName, number>>,
    maxReadRequestUnits: (s.maxReadRequestUnits ?? {}) as CapacityCaps,
    maxWriteRequestUnits: (s.maxWriteRequestUnits ?? {}) as CapacityCaps,
    eventLogPointInTimeRecovery: s.eventLogPointInTimeRecovery,
    retainLogGroups: s.retainLogGroups,
    terminationProtection: s.terminationProtection,
    account,
    region,
    placeholderEnv: account === PLACEHOLDER_ACCOUNT,
    skipBundling: s['sluice:skipBundling'],
    nag: s['sluice:nag'],
  };
}

/**
 * Reads and validates the settings from a construct tree's context (`cdk.json` and `-c key=value`).
 *
 * @throws SettingsError naming every invalid key
 */
export function readSettings(
  node: Node,
  env: Readonly<Record<string, string | undefined>> = process.env,
): SluiceSettings {
  const raw: Record<string, unknown> = {};
  for (const key of SETTING_KEYS) {
    const value: unknown = node.tryGetContext(key);
    if (value !== undefined) raw[key] = value;
  }
  // Feature flags and the CLI's own keys carry a ':' or '/'; a bare camelCase key is meant for us.
  const unknown = Object.keys(node.getAllContext()).filter(
    (key) => /^[a-z][a-zA-Z0-9]*$/.test(key) && !(SETTING_KEYS as readonly string[]).includes(key),
  );
  if (unknown.length > 0) {
    throw new SettingsError(
      unknown.map((key) => `${key}: unknown setting (known: ${SETTING_KEYS.join(', ')})`),
    );
  }
  return parseSettings(raw, env);
}
