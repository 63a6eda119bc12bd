/**
 * `sluice files pull --export <id> --to <dir>` (the work is in `files-pull.ts`, loaded when used: it brings
 * the S3 client).
 */
import { Command } from 'commander';
import { join } from 'node:path';
import type { DataExportView } from './api-client.js';
import type { CliContext } from './context.js';
import type { PullResult } from './files-pull.js';
import { type CommonOptions, exportIdArgument, withClient, withCommonOptions } from './data-exports.js';

/** The lines printed after a pull: what was copied and the DuckDB query on it. */
export function pullLines(result: PullResult, view: DataExportView): string[] {
  const root = join(result.to, result.prefix);
  const extension = view.format === 'parquet' ? 'parquet' : 'jsonl.gz';
  const reader = view.format === 'parquet' ? 'read_parquet' : 'read_json_auto';
  const dataset = view.datasets.find((name) => name !== 'subscribers') ?? view.datasets[0] ?? 'email_events';
  const glob =
    view.layout === 'run_hour'
      ? `${root}/v1/schema_type=${dataset}/**/*.${extension}`
      : `${root}/${dataset}/date=*/*.${extension}`;
  return [
    `Copied ${result.objects} objects (${result.bytes} bytes) of ${view.id} to ${root}`,
    'Read them with DuckDB, for example:',
    `  duckdb -c "SELECT count(*) FROM ${reader}('${glob}')"`,
  ];
}

/** `files pull`. */
export function filesCommand(context: CliContext): Command {
  const files = new Command('files').description("copy an export's objects from its bucket");
  files.addCommand(
    withCommonOptions(
      new Command('pull')
        .description("write an export's objects into a folder under their own keys (for DuckDB and friends)")
        .requiredOption('--export <id>', 'the data export id (exp_…)', exportIdArgument)
        .requiredOption('--to <dir>', 'the folder to write into (created if missing)'),
    ).action(async (options: CommonOptions & { export: string; to: string }) => {
      await withClient(
        context,
        options,
        async (client) => {
          const { pullObjects, readerFor } = await import('./files-pull.js');
          const { dataExport } = await client.get(options.export);
          const reader = readerFor(dataExport, context.localJsonFile);
          try {
            const result = await pullObjects(reader, dataExport.bucket, dataExport.pathPrefix, options.to);
            return { result, dataExport };
          } finally {
            reader.destroy();
          }
        },
        ({ result, dataExport }) => pullLines(result, dataExport),
      );
    }),
  );
  return files;
}
