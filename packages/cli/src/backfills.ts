/**
 * `sluice data-exports backfill create | list | get | cancel | retry`: the backfills of a data export, a thin client
 * of `/data-exports/{id}/backfills`. `create --watch` and `get --watch` follow one with a progress line per
 * dataset until it ends.
 */
import { backfillIdProblem, EVENT_DATASETS } from '@sluice/core';
import { Command, InvalidArgumentError } from 'commander';
import type { BackfillView, DataExportsClient } from './api-client.js';
import { type CliContext, ExitError } from './context.js';
import {
  type CommonOptions,
  EXPORT_ID_HELP,
  exportIdArgument,
  parseInterval,
  parseLimit,
  withClient,
  withCommonOptions,
} from './data-exports.js';
import { formatBytes, formatCount, table, terminalSafe } from './format.js';

/** `[#####-----]  50%`: windows done of total, all datasets together. */
export function progressBar(backfill: BackfillView, width = 20): string {
  const counts = Object.values(backfill.progress);
  const total = counts.reduce((sum, p) => sum + p.windowsTotal, 0);
  const done = counts.reduce((sum, p) => sum + p.windowsDone, 0);
  const share = total === 0 ? (backfill.status === 'succeeded' ? 1 : 0) : done / total;
  const filled = Math.round(share * width);
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${String(Math.floor(share * 100)).padStart(3)}%`;
}

/** The lines of one backfill: its state and bar, then one line per dataset (windows, rows, files, bytes). */
export function backfillLines(backfill: BackfillView): string[] {
  const range = backfill.fullHistory
    ? `whole history (from ${backfill.from})`
    : `${backfill.from} to ${backfill.to}`;
  return [
    `${backfill.id}  ${backfill.status}  ${progressBar(backfill)}  ${range}`,
    ...Object.entries(backfill.progress).map(
      ([dataset, p]) =>
        `  ${dataset}: ${p.windowsDone}/${p.windowsTotal} windows, ${formatCount(p.rows)} rows, ${formatCount(p.files)} files, ${formatBytes(p.bytes)}`,
    ),
    ...(backfill.error ? [`  error: ${backfill.error}`] : []),
  ];
}

function backfillsTable(backfills: readonly BackfillView[]): string[] {
  if (backfills.length === 0) return ['No backfills.'];
  return table(
    ['ID', 'STATUS', 'PROGRESS', 'FROM', 'TO', 'CREATED'],
    backfills.map((b) => [
      b.id,
      b.status,
      progressBar(b, 10),
      b.fullHistory ? 'earliest' : b.from,
      b.to,
      b.createdAt,
    ]),
  );
}

/** Polls a backfill, printing its lines whenever they change, until it is no longer queued or running. */
export async function watchBackfill(
  client: DataExportsClient,
  id: string,
  backfillId: string,
  context: CliContext,
  intervalMs: number,
): Promise<BackfillView> {
  const sleep = context.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  let shown = '';
  for (;;) {
    const { backfill } = await client.backfill(id, backfillId);
    const text = backfillLines(backfill).join('\n');
    if (text !== shown) {
      for (const line of backfillLines(backfill)) context.out(terminalSafe(line));
      shown = text;
    }
    if (backfill.status !== 'queued' && backfill.status !== 'running') return backfill;
    await sleep(intervalMs);
  }
}

interface WatchFlags extends CommonOptions {
  watch?: boolean;
  interval: string;
}

/** Follows a backfill to its end; exit code 1 unless it succeeded. */
async function follow(
  context: CliContext,
  options: WatchFlags,
  id: string,
  backfillId: string,
): Promise<void> {
  const intervalMs = parseInterval(options.interval);
  const quiet: CliContext = options.json ? { ...context, out: () => {} } : context;
  let finished: BackfillView | undefined;
  await withClient(
    context,
    options,
    async (client) => {
      finished = await watchBackfill(client, id, backfillId, quiet, intervalMs);
      return finished;
    },
    () => [],
  );
  if (finished?.status !== 'succeeded') throw new ExitError(1);
}

/** Parses a `<backfillId>` argument: anything but a backfill id is a usage error before any request. */
export function backfillIdArgument(value: string): string {
  const problem = backfillIdProblem(value);
  if (problem !== undefined) throw new InvalidArgumentError(problem);
  return value;
}

/** The `backfill` command group under `data-exports`. */
export function backfillCommand(context: CliContext): Command {
  const group = new Command('backfill').description(
    'export a chosen range (up to 7 days) or the whole history again, beside the regular export',
  );

  withCommonOptions(
    group
      .command('create')
      .description('queue a backfill of a data export')
      .argument('<id>', EXPORT_ID_HELP, exportIdArgument)
      .option('--from <date-time>', 'ISO 8601 start of the range, or "earliest" for the whole history')
      .option('--to <date-time>', 'ISO 8601 end of the range (exclusive; at most 7 days after --from)')
      .option('--datasets <list>', `comma-separated: ${EVENT_DATASETS.join(', ')} (default: the export's)`)
      .option('--watch', 'follow it until it ends (exit code 1 unless it succeeds)')
      .option('--interval <seconds>', 'seconds between polls with --watch', '2'),
  ).action(async (id: string, options: WatchFlags & { from?: string; to?: string; datasets?: string }) => {
    const body: Record<string, unknown> = {};
    if (options.from !== undefined) body.from = options.from;
    if (options.to !== undefined) body.to = options.to;
    if (options.datasets !== undefined) {
      body.datasets = options.datasets
        .split(',')
        .map((item) => item.trim())
        .filter(Boolean);
    }
    let created: string | undefined;
    await withClient(
      context,
      options,
      async (client) => {
        const result = await client.createBackfill(id, body);
        created = result.backfill.id;
        return result;
      },
      (result) => [`Backfill ${result.backfill.id} queued.`, ...backfillLines(result.backfill)],
    );
    if (options.watch && created !== undefined) await follow(context, options, id, created);
  });

  withCommonOptions(
    group
      .command('list')
      .description('list the backfills of a data export, newest first')
      .argument('<id>', EXPORT_ID_HELP, exportIdArgument)
      .option('--limit <n>', 'at most this many (1-100)')
      .option('--next-token <token>', 'the page after the one that printed this token'),
  ).action(async (id: string, options: CommonOptions & { limit?: string; nextToken?: string }) => {
    const limit = options.limit === undefined ? undefined : parseLimit(options.limit);
    await withClient(
      context,
      options,
      (client) => client.backfills(id, limit, options.nextToken),
      (result) => [
        ...backfillsTable(result.backfills),
        ...(result.nextToken
          ? ['', `More: sluice data-exports backfill list ${id} --next-token ${result.nextToken}`]
          : []),
      ],
    );
  });

  withCommonOptions(
    group
      .command('get')
      .description('show one backfill with its progress per dataset')
      .argument('<id>', EXPORT_ID_HELP, exportIdArgument)
      .argument('<backfillId>', 'the backfill id (bf_…)', backfillIdArgument)
      .option('--watch', 'follow it until it ends (exit code 1 unless it succeeds)')
      .option('--interval <seconds>', 'seconds between polls with --watch', '2'),
  ).action(async (id: string, backfillId: string, options: WatchFlags) => {
    if (options.watch) return follow(context, options, id, backfillId);
    await withClient(
      context,
      options,
      (client) => client.backfill(id, backfillId),
      (result) => backfillLines(result.backfill),
    );
  });

  withCommonOptions(
    group
      .command('cancel')
      .description('cancel a queued or running backfill (a running one stops before its next file)')
      .argument('<id>', EXPORT_ID_HELP, exportIdArgument)
      .argument('<backfillId>', 'the backfill id (bf_…)', backfillIdArgument),
  ).action((id: string, backfillId: string, options: CommonOptions) =>
    withClient(
      context,
      options,
      (client) => client.cancelBackfill(id, backfillId),
      (result) => [`Backfill ${result.backfill.id} cancelled.`, ...backfillLines(result.backfill)],
    ),
  );

  withCommonOptions(
    group
      .command('retry')
      .description(
        'retry a failed backfill from where it stopped (only the windows not yet done are written)',
      )
      .argument('<id>', EXPORT_ID_HELP, exportIdArgument)
      .argument('<backfillId>', 'the backfill id (bf_…)', backfillIdArgument)
      .option('--watch', 'follow it until it ends (exit code 1 unless it succeeds)')
      .option('--interval <seconds>', 'seconds between polls with --watch', '2'),
  ).action(async (id: string, backfillId: string, options: WatchFlags) => {
    await withClient(
      context,
      options,
      (client) => client.retryBackfill(id, backfillId),
      (result) => [`Backfill ${result.backfill.id} queued again.`, ...backfillLines(result.backfill)],
    );
    if (options.watch) await follow(context, options, id, backfillId);
  });

  return group;
}
