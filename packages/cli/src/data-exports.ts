/**
 * `sluice data-exports …`: one command per operation of the Data Exports API, each a thin client of it.
 * Options are named after the API's fields (`pathPrefix` → `--path-prefix`); the API validates, and its
 * message and field issues are printed as they come. `--json` prints the API's JSON, success or error.
 */
import {
  COMPRESSIONS,
  DATASETS,
  destinationIdProblem,
  EXPORT_FORMATS,
  FREQUENCIES,
  LAYOUTS,
  PROVIDERS,
} from '@sluice/core';
import { Command, InvalidArgumentError, Option } from 'commander';
import { ApiError, ApiUnreachableError, type DataExportRunView, DataExportsClient } from './api-client.js';
import { ConnectionError, type ConnectionOptions, resolveConnection } from './connection.js';
import { type CliContext, ExitError, UsageError } from './context.js';
import {
  dataExportBlock,
  dataExportsTable,
  errorLines,
  firstFilesLines,
  runProgressLines,
  runsTable,
  terminalJson,
  terminalSafe,
} from './format.js';
import { promptSecret, readSecretFromStream } from './secret.js';

/** A location or configuration field settable from the command line: the API's name and the option's. */
interface FieldOption {
  field: string;
  flags: string;
  description: string;
  /** Turns the option's text into the API's value. @default the text as is */
  parse?: (value: string) => unknown;
}

/** The help of every `<id>` argument. */
export const EXPORT_ID_HELP = 'the data export id (exp_…)';

/**
 * Parses an `<id>` argument: anything but a data export id is a usage error before any request, so no
 * argument can add a path segment (`..`) to the URL the client builds.
 */
export function exportIdArgument(value: string): string {
  const problem = destinationIdProblem(value);
  if (problem !== undefined) throw new InvalidArgumentError(problem);
  return value;
}

const listOf = (value: string) =>
  value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);

const NAME: FieldOption = { field: 'name', flags: '--name <name>', description: 'a name for the export' };
const PROVIDER: FieldOption = {
  field: 'provider',
  flags: '--provider <provider>',
  description: `${PROVIDERS.join(' or ')} (s3 also for R2, MinIO, B2 with --endpoint)`,
};
const LOCATION: FieldOption[] = [
  { field: 'bucket', flags: '--bucket <bucket>', description: 'bucket name, not a URL' },
  { field: 'region', flags: '--region <region>', description: 'required for Amazon S3 (us-east-1, ...)' },
  {
    field: 'endpoint',
    flags: '--endpoint <url>',
    description: 'HTTPS endpoint of an S3-compatible store ("" clears it on update)',
  },
  { field: 'pathPrefix', flags: '--path-prefix <prefix>', description: 'folder inside the bucket' },
  { field: 'accessKeyId', flags: '--access-key-id <id>', description: 'access key id (HMAC id for gcs)' },
  {
    field: 'roleArn',
    flags: '--role-arn <arn>',
    description: 'an IAM role Sluice assumes instead of a key (Amazon S3 only; trust its externalId)',
  },
];
const SCHEDULE: FieldOption[] = [
  {
    field: 'datasets',
    flags: '--datasets <list>',
    description: `comma-separated: ${DATASETS.join(', ')}`,
    parse: listOf,
  },
  { field: 'frequency', flags: '--frequency <frequency>', description: FREQUENCIES.join(', ') },
  {
    field: 'format',
    flags: '--format <format>',
    description: `${EXPORT_FORMATS.join(' or ')} (default jsonl; a change applies from the next window)`,
  },
  {
    field: 'compression',
    flags: '--compression <compression>',
    description: `${COMPRESSIONS.join(', ')} (gzip for jsonl; snappy, the default, or zstd for parquet)`,
  },
  {
    field: 'layout',
    flags: '--layout <layout>',
    description: `${LAYOUTS.join(' or ')} (default date; run_hour: hourly or daily, event datasets only)`,
  },
  {
    field: 'schedule',
    flags: '--schedule <when>',
    description: 'run time, UTC: ":05" (hourly, minute 5), "08:00" (daily), or "none" for the default slot',
    parse: parseSchedule,
  },
];
/**
 * `--schedule`: `:MM` (hourly), `HH:MM` (daily) or `none`. Anything else is a usage error; the API checks the
 * ranges (minute 0–59, hour 0–23, hour only for daily).
 */
export function parseSchedule(value: string): { minute: number; hour?: number } | null {
  if (value === 'none') return null;
  const hourly = /^:(\d{1,2})$/.exec(value);
  if (hourly) return { minute: Number(hourly[1]) };
  const daily = /^(\d{1,2}):(\d{2})$/.exec(value);
  if (daily) return { hour: Number(daily[1]), minute: Number(daily[2]) };
  throw new UsageError('--schedule takes ":MM" (hourly), "HH:MM" (daily, UTC) or "none".');
}

const CHILD_ORGANIZATIONS: FieldOption = {
  field: 'childOrganizations',
  flags: '--child-organizations <list>',
  description:
    'child workspaces whose data the export includes: comma-separated ids, or "*" for every current and future child ("" for none; on update it clears the list)',
  parse: listOf,
};
const START_FROM: FieldOption = {
  field: 'startFrom',
  flags: '--start-from <date-time>',
  description: 'ISO 8601 time to export from, at most 30 days ago (default: now)',
};
const CREATE_FIELDS = [NAME, PROVIDER, ...LOCATION, ...SCHEDULE, CHILD_ORGANIZATIONS, START_FROM];
const UPDATE_FIELDS = [NAME, ...LOCATION, ...SCHEDULE, CHILD_ORGANIZATIONS];
const SECRET_STDIN_FLAG = '--secret-access-key-stdin';

/** The option that sets an API field, for error lines (`pathPrefix` → `--path-prefix`). */
export function optionForField(path: string): string | undefined {
  const field = path.split(/[.[]/)[0] ?? '';
  if (field === 'secretAccessKey') return SECRET_STDIN_FLAG;
  // The range of `backfill create`.
  if (field === 'from' || field === 'to') return `--${field}`;
  const option = CREATE_FIELDS.find((candidate) => candidate.field === field);
  return option?.flags.split(' ')[0];
}

function optionKey(option: FieldOption): string {
  return new Option(option.flags).attributeName();
}

/** The request body from the field options that were given (only those). */
function bodyFrom(options: Record<string, unknown>, fields: readonly FieldOption[]): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const option of fields) {
    const value = options[optionKey(option)];
    if (typeof value === 'string') body[option.field] = option.parse ? option.parse(value) : value;
  }
  return body;
}

/** Options every data-exports command takes. */
export interface CommonOptions extends ConnectionOptions {
  json?: boolean;
}

export function withCommonOptions(command: Command): Command {
  return command
    .option(
      '--api-url <url>',
      'API base URL, such as https://…/api/v1 (default: $SLUICE_API_URL, or npm start)',
    )
    .option('--api-key <key>', 'API key (default: $SLUICE_API_KEY, or npm start)')
    .option('--json', "print the API's JSON");
}

/** Reads the secret: whole from stdin with the flag, else at a prompt that does not echo. */
async function readSecret(context: CliContext, fromStdin: boolean): Promise<string> {
  if (fromStdin) {
    const secret = await readSecretFromStream(context.stdin);
    if (secret === '') throw new UsageError(`${SECRET_STDIN_FLAG} was given but standard input was empty.`);
    return secret;
  }
  return promptSecret('Secret access key: ', context.stdin, context.promptOutput ?? process.stderr);
}

/**
 * Runs one command's work with the client, printing `--json` output or the readable lines, and turns a
 * failure into its lines and an exit code (1).
 */
export async function withClient<T>(
  context: CliContext,
  options: CommonOptions,
  act: (client: DataExportsClient) => Promise<T>,
  print: (result: T) => string[],
): Promise<void> {
  try {
    const connection = resolveConnection(options, context.env, context.localJsonFile);
    const client = new DataExportsClient(connection, context.fetch);
    const result = await act(client);
    if (options.json) context.out(terminalJson(result));
    else for (const line of print(result)) context.out(terminalSafe(line));
  } catch (error) {
    if (error instanceof ApiError) {
      if (options.json) context.out(terminalJson(error.body));
      else {
        const issues = error.issues.map((issue) => {
          const option = optionForField(issue.path);
          return option ? { ...issue, option } : issue;
        });
        for (const line of errorLines(error.message, issues)) context.err(terminalSafe(line));
      }
      throw new ExitError(1);
    }
    if (error instanceof ConnectionError || error instanceof ApiUnreachableError) {
      context.err(`Error: ${error.message}`);
      throw new ExitError(1);
    }
    throw error;
  }
}

/** Follows runs of an export until one finishes. */
interface WatchOptions {
  /** Run ids that existed before: the run to follow is the first one not among them. */
  known?: ReadonlySet<string>;
  intervalMs: number;
}

/**
 * Polls the runs of an export and prints the progress of one run whenever it changes, until it has finished:
 * with `known`, the first run not in it (a run just queued); otherwise the newest run if it is running, else
 * the next one to start. Returns the finished run.
 */
export async function watchRun(
  client: DataExportsClient,
  id: string,
  context: CliContext,
  options: WatchOptions,
): Promise<DataExportRunView> {
  const sleep = context.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  let known = options.known;
  if (!known) {
    const { runs } = await client.runs(id, 10);
    const newest = runs[0];
    known = new Set(runs.filter((run) => run !== newest || run.status !== 'running').map((run) => run.id));
  }
  let followed: string | undefined;
  let shown = '';
  let waiting = false;
  for (;;) {
    const { runs } = await client.runs(id, 10);
    const run = runs.find((candidate) => (followed ? candidate.id === followed : !known.has(candidate.id)));
    if (run) {
      followed = run.id;
      const lines = runProgressLines(run);
      const text = lines.join('\n');
      if (text !== shown) {
        for (const line of lines) context.out(terminalSafe(line));
        shown = text;
      }
      if (run.status !== 'running') return run;
    } else if (!waiting) {
      context.err(`Waiting for a run of ${id} to start… (Ctrl-C stops watching, not the run)`);
      waiting = true;
    }
    await sleep(options.intervalMs);
  }
}

export function parseInterval(value: string): number {
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds <= 0)
    throw new UsageError(`--interval must be a number of seconds above 0`);
  return Math.round(seconds * 1000);
}

export function parseLimit(value: string): number {
  if (!/^\d+$/.test(value)) throw new UsageError('--limit must be an integer from 1 to 100');
  return Number(value);
}

/** The `data-exports` command group (its `backfill` subgroup is added by `program.ts`). */
export function dataExportsCommand(context: CliContext): Command {
  const group = new Command('data-exports').description('manage data exports through the HTTP API');

  withCommonOptions(group.command('list').description('list the data exports of the workspace')).action(
    (options: CommonOptions) =>
      withClient(
        context,
        options,
        (client) => client.list(),
        (result) => dataExportsTable(result.dataExports),
      ),
  );

  const create = withCommonOptions(
    group
      .command('create')
      .description('create a data export (a test file is written first) and queue its first run'),
  );
  for (const option of CREATE_FIELDS) create.option(option.flags, option.description);
  create
    .option(SECRET_STDIN_FLAG, 'read the secret access key from standard input (else it is asked for)')
    .addHelpText(
      'after',
      `\nExample:\n  printf %s "$SECRET" | sluice data-exports create --name "Analytics lake" --provider s3 \\\n    --bucket acme-exports --region us-east-1 --access-key-id AKIA... --secret-access-key-stdin \\\n    --datasets email_events,sms_events --frequency hourly`,
    )
    .action(async (options: CommonOptions & Record<string, unknown>) => {
      const body = bodyFrom(options, CREATE_FIELDS);
      // A role export has no secret: none is read (the API refuses a role sent with keys).
      if (body.roleArn === undefined || body.accessKeyId !== undefined || options.secretAccessKeyStdin) {
        body.secretAccessKey = await readSecret(context, options.secretAccessKeyStdin === true);
      }
      await withClient(
        context,
        options,
        (client) => client.create(body),
        (result) => [
          `Created ${result.dataExport.id}; its first run is queued.`,
          ...firstFilesLines(result.dataExport),
          '',
          ...dataExportBlock(result.dataExport),
        ],
      );
    });

  withCommonOptions(
    group
      .command('get')
      .description('show one data export')
      .argument('<id>', EXPORT_ID_HELP, exportIdArgument),
  ).action((id: string, options: CommonOptions) =>
    withClient(
      context,
      options,
      (client) => client.get(id),
      (result) => dataExportBlock(result.dataExport),
    ),
  );

  const update = withCommonOptions(
    group
      .command('update')
      .description('change, pause or resume a data export (location and key changes are tested first)')
      .argument('<id>', EXPORT_ID_HELP, exportIdArgument),
  );
  for (const option of UPDATE_FIELDS) update.option(option.flags, option.description);
  update
    .option(SECRET_STDIN_FLAG, 'with --access-key-id: read the new secret from standard input')
    .option('--pause', 'pause the export (isEnabled false)')
    .option('--resume', 'resume the export (isEnabled true)')
    .action(async (id: string, options: CommonOptions & Record<string, unknown>) => {
      if (options.pause && options.resume)
        throw new UsageError('--pause and --resume cannot be used together');
      const body = bodyFrom(options, UPDATE_FIELDS);
      if (options.pause) body.isEnabled = false;
      if (options.resume) body.isEnabled = true;
      if (body.accessKeyId !== undefined || options.secretAccessKeyStdin) {
        body.secretAccessKey = await readSecret(context, options.secretAccessKeyStdin === true);
      }
      await withClient(
        context,
        options,
        (client) => client.update(id, body),
        (result) => [`Updated ${result.dataExport.id}.`, '', ...dataExportBlock(result.dataExport)],
      );
    });

  withCommonOptions(
    group
      .command('delete')
      .description('delete a data export and its run history (files already written stay)')
      .argument('<id>', EXPORT_ID_HELP, exportIdArgument)
      .option('--yes', 'do not ask for confirmation'),
  ).action(async (id: string, options: CommonOptions & { yes?: boolean }) => {
    if (!options.yes) {
      throw new UsageError(
        `Deleting stops the export and removes its run history: add --yes to delete ${id}.`,
      );
    }
    await withClient(
      context,
      options,
      (client) => client.delete(id),
      (result) => [`Deleted ${result.dataExportId}.`],
    );
  });

  withCommonOptions(
    group
      .command('test')
      .description('write a test file with the stored credentials')
      .argument('<id>', EXPORT_ID_HELP, exportIdArgument),
  ).action((id: string, options: CommonOptions) =>
    withClient(
      context,
      options,
      (client) => client.test(id),
      (result) => [`Test file written at ${result.testedAt}.`],
    ),
  );

  withCommonOptions(
    group
      .command('run')
      .description('queue a run now instead of waiting for the schedule')
      .argument('<id>', EXPORT_ID_HELP, exportIdArgument)
      .option('--watch', 'follow the run until it finishes (exit code 1 if it fails)')
      .option('--interval <seconds>', 'seconds between polls with --watch', '2'),
  ).action(async (id: string, options: CommonOptions & { watch?: boolean; interval: string }) => {
    const intervalMs = parseInterval(options.interval);
    let known: Set<string> | undefined;
    await withClient(
      context,
      options,
      async (client) => {
        if (options.watch) known = new Set((await client.runs(id, 10)).runs.map((run) => run.id));
        return client.run(id);
      },
      (result) => [result.queued ? `Run of ${id} queued.` : `A run of ${id} is already queued or running.`],
    );
    if (options.watch) await followRun(context, options, id, { known, intervalMs });
  });

  withCommonOptions(
    group
      .command('runs')
      .description('list the runs of the last 14 days, newest first')
      .argument('<id>', EXPORT_ID_HELP, exportIdArgument)
      .option('--limit <n>', 'at most this many runs (1-100)')
      .option('--next-token <token>', 'the page after the one that printed this token')
      .option('--watch', 'show the history, then follow the running (or next) run live, a line per dataset')
      .option('--interval <seconds>', 'seconds between polls with --watch', '2'),
  ).action(
    async (
      id: string,
      options: CommonOptions & { watch?: boolean; interval: string; limit?: string; nextToken?: string },
    ) => {
      const intervalMs = parseInterval(options.interval);
      const limit = options.limit === undefined ? undefined : parseLimit(options.limit);
      if (options.watch) {
        // The history first, as `runs` prints it, then the live run below it.
        if (!options.json) {
          await withClient(
            context,
            options,
            (client) => client.runs(id, limit),
            (result) => [...runsTable(result.runs), ''],
          );
        }
        return followRun(context, options, id, { intervalMs });
      }
      const more = (token: string) =>
        `More: sluice data-exports runs ${id}${limit ? ` --limit ${limit}` : ''} --next-token ${token}`;
      await withClient(
        context,
        options,
        (client) => client.runs(id, limit, options.nextToken),
        (result) => [...runsTable(result.runs), ...(result.nextToken ? ['', more(result.nextToken)] : [])],
      );
    },
  );

  return group;
}

/** `--watch`: follows the run; exit code 1 when it failed. With `--json`, prints the finished run's JSON. */
async function followRun(
  context: CliContext,
  options: CommonOptions,
  id: string,
  watch: { known?: Set<string> | undefined; intervalMs: number },
): Promise<void> {
  let finished: DataExportRunView | undefined;
  const quiet: CliContext = options.json ? { ...context, out: () => {} } : context;
  await withClient(
    context,
    options,
    async (client) => {
      finished = await watchRun(client, id, quiet, {
        intervalMs: watch.intervalMs,
        ...(watch.known ? { known: watch.known } : {}),
      });
      return finished;
    },
    (run) => (run.status === 'failed' ? [`Run ${run.id} failed: ${run.error ?? 'no reason given'}`] : []),
  );
  if (finished?.status === 'failed') throw new ExitError(1);
}
