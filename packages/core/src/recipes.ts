import { createHash } from 'node:crypto';
import { type Dataset, isEventDataset } from './datasets.js';
import type { ExportFormat } from './file-format.js';
import { includesChildren } from './included-organizations.js';
import { withPrefix } from './layout.js';
import { PARQUET_COLUMNS, type ParquetColumnType } from './parquet-schema.js';
import type { Layout } from './run-hour.js';

/**
 * Reading recipes: the SQL (and notes) that read an export's files in Athena, Glue, Snowflake, BigQuery,
 * Databricks and DuckDB, generated from the dataset's columns (`PARQUET_COLUMNS`, the schema the files are
 * written with), for each layout and format. The same text is in the docs, written beside the data
 * (`_sluice/schema/`), and run by the tests where an engine is available here (DuckDB). Pure.
 */

/** The engines a recipe is for. */
export const RECIPE_ENGINES = ['athena', 'glue', 'snowflake', 'bigquery', 'databricks', 'duckdb'] as const;
export type RecipeEngine = (typeof RECIPE_ENGINES)[number];

/** Each column type in each engine's DDL. `json` columns are JSON text in Parquet: strings everywhere. */
export const ENGINE_TYPES: Record<
  'athena' | 'snowflake' | 'bigquery' | 'spark' | 'duckdb',
  Record<ParquetColumnType, string>
> = {
  athena: {
    boolean: 'BOOLEAN',
    string: 'STRING',
    json: 'STRING',
    timestamp_millis_utc: 'TIMESTAMP',
    date: 'DATE',
    int32: 'INT',
    int64: 'BIGINT',
    double: 'DOUBLE',
    string_list: 'ARRAY<STRING>',
  },
  snowflake: {
    boolean: 'BOOLEAN',
    string: 'VARCHAR',
    json: 'VARCHAR',
    timestamp_millis_utc: 'TIMESTAMP_TZ(3)',
    date: 'DATE',
    int32: 'INTEGER',
    int64: 'BIGINT',
    double: 'DOUBLE',
    string_list: 'ARRAY',
  },
  bigquery: {
    boolean: 'BOOL',
    string: 'STRING',
    json: 'STRING',
    timestamp_millis_utc: 'TIMESTAMP',
    date: 'DATE',
    int32: 'INT64',
    int64: 'INT64',
    double: 'FLOAT64',
    string_list: 'ARRAY<STRING>',
  },
  spark: {
    boolean: 'BOOLEAN',
    string: 'STRING',
    json: 'STRING',
    timestamp_millis_utc: 'TIMESTAMP',
    date: 'DATE',
    int32: 'INT',
    int64: 'BIGINT',
    double: 'DOUBLE',
    string_list: 'ARRAY<STRING>',
  },
  duckdb: {
    boolean: 'BOOLEAN',
    string: 'VARCHAR',
    json: 'VARCHAR',
    timestamp_millis_utc: 'TIMESTAMPTZ',
    date: 'DATE',
    int32: 'INTEGER',
    int64: 'BIGINT',
    double: 'DOUBLE',
    string_list: 'VARCHAR[]',
  },
};

/** What a recipe is generated for: one dataset of one export. */
export interface RecipeInput {
  dataset: Dataset;
  layout: Layout;
  format: ExportFormat;
  bucket: string;
  /** The export's path prefix ('' for the bucket root). */
  pathPrefix: string;
  /** `s3` (also S3-compatible stores) or `gcs`: the URL scheme of the locations. @default s3 */
  scheme?: 's3' | 'gs';
  /**
   * DuckDB only: where the export's files are, instead of `<scheme>://<bucket>/<prefix>` (a folder written by
   * `sluice files pull`, `<dir>/<prefix>`).
   */
  duckdbRoot?: string;
  /**
   * The export includes child organisations (`date` layout): each organisation's files are in an
   * `organization_id=<ws>` folder below `date=D`, a partition column of every recipe (and no file column of
   * that name: the second product's `organization_id` holds the same value).
   */
  partitioned?: boolean;
}

/** One recipe: the engine, a title and the text to run (or to follow). */
export interface Recipe {
  engine: RecipeEngine;
  title: string;
  /** `sql`, `python` or `text` (notes). */
  language: 'sql' | 'python' | 'text';
  text: string;
}

/** The folder of a dataset's files below the export's root, without a trailing slash. */
export function datasetFolder(layout: Layout, dataset: Dataset): string {
  return layout === 'run_hour' ? `v1/schema_type=${dataset}` : dataset;
}

/**
 * The Hive partition columns a layout's folders add (all strings, as in the paths): in `date`, also
 * `organization_id` when the files are partitioned by organisation (an export that includes children).
 */
export function partitionColumns(layout: Layout, partitioned = false): string[] {
  if (layout === 'run_hour') return ['schema_type', 'year', 'month', 'day', 'hour'];
  return partitioned ? ['date', 'organization_id'] : ['date'];
}

/** True when the recipe's files are in `organization_id=` folders (the `date` layout of an export with children). */
function byOrganization(input: RecipeInput): boolean {
  return input.partitioned === true && input.layout === 'date' && isEventDataset(input.dataset);
}

/** The partition columns of a recipe's files. */
function partitionsOf(input: RecipeInput): string[] {
  return partitionColumns(input.layout, byOrganization(input));
}

/** A dataset's file columns a recipe declares: all, but a partition column's namesake (its value is the same). */
function dataColumns(input: RecipeInput) {
  const partitions = partitionsOf(input);
  return PARQUET_COLUMNS[input.dataset].filter((column) => !partitions.includes(column.name));
}

/** The glob of a dataset's data files below a root. */
function filesGlob(root: string, input: RecipeInput): string {
  const extension = input.format === 'parquet' ? 'parquet' : 'jsonl.gz';
  const folder = `${root}/${datasetFolder(input.layout, input.dataset)}`;
  if (input.layout === 'run_hour') return `${folder}/**/*.${extension}`;
  const organization = byOrganization(input) ? 'organization_id=*/' : '';
  return `${folder}/date=*/${organization}${input.dataset === 'subscribers' ? 'subscribers' : input.dataset}-*.${extension}`;
}

function rootOf(input: RecipeInput): string {
  const prefix = input.pathPrefix.replace(/^\/+|\/+$/g, '');
  return `${input.scheme ?? 's3'}://${input.bucket}${prefix === '' ? '' : `/${prefix}`}`;
}

function columnList(input: RecipeInput, engine: keyof typeof ENGINE_TYPES, indent = '  '): string {
  return dataColumns(input)
    .map((column) => `${indent}${quoteName(column.name, engine)} ${ENGINE_TYPES[engine][column.type]}`)
    .join(',\n');
}

/** A column name quoted for the engine (names are snake_case; `date` and the like are keywords). */
function quoteName(name: string, engine: keyof typeof ENGINE_TYPES): string {
  return engine === 'athena' || engine === 'bigquery' || engine === 'spark' ? `\`${name}\`` : `"${name}"`;
}

function athena(input: RecipeInput): Recipe {
  const root = rootOf(input);
  const { dataset, layout } = input;
  const location = layout === 'run_hour' ? `${root}/v1/` : `${root}/${dataset}/`;
  const projection =
    layout === 'run_hour'
      ? [
          `'projection.schema_type.type' = 'enum'`,
          `'projection.schema_type.values' = '${dataset}'`,
          `'projection.year.type' = 'integer'`,
          `'projection.year.range' = '2024,2099'`,
          `'projection.month.type' = 'integer'`,
          `'projection.month.range' = '1,12'`,
          `'projection.month.digits' = '2'`,
          `'projection.day.type' = 'integer'`,
          `'projection.day.range' = '1,31'`,
          `'projection.day.digits' = '2'`,
          `'projection.hour.type' = 'integer'`,
          `'projection.hour.range' = '0,23'`,
          `'projection.hour.digits' = '2'`,
          `'storage.location.template' = '${root}/v1/schema_type=\${schema_type}/year=\${year}/month=\${month}/day=\${day}/hour=\${hour}/'`,
        ]
      : [
          `'projection.date.type' = 'date'`,
          `'projection.date.format' = 'yyyy-MM-dd'`,
          `'projection.date.range' = '2024-01-01,NOW'`,
          `'projection.date.interval' = '1'`,
          `'projection.date.interval.unit' = 'DAYS'`,
          ...(byOrganization(input)
            ? [
                // The organisations come and go: their ids are given in each query (WHERE organization_id IN (…)).
                `'projection.organization_id.type' = 'injected'`,
                `'storage.location.template' = '${root}/${dataset}/date=\${date}/organization_id=\${organization_id}/'`,
              ]
            : [`'storage.location.template' = '${root}/${dataset}/date=\${date}/'`]),
        ];
  const partitions = partitionsOf(input)
    .map((name) => `\`${name}\` STRING`)
    .join(', ');
  const storage =
    input.format === 'parquet'
      ? 'STORED AS PARQUET'
      : "ROW FORMAT SERDE 'org.openx.data.jsonserde.JsonSerDe'\nWITH SERDEPROPERTIES ('timestamp.formats' = 'yyyy-MM-dd''T''HH:mm:ss.SSSXXX')\nSTORED AS TEXTFILE";
  return {
    engine: 'athena',
    title: `Athena: ${dataset} with partition projection`,
    language: 'sql',
    text: [
      `CREATE EXTERNAL TABLE IF NOT EXISTS \`${dataset}\` (`,
      columnList(input, 'athena'),
      ')',
      `PARTITIONED BY (${partitions})`,
      storage,
      `LOCATION '${location}'`,
      'TBLPROPERTIES (',
      `  'projection.enabled' = 'true',`,
      projection.map((line) => `  ${line}`).join(',\n'),
      ');',
    ].join('\n'),
  };
}

function glue(input: RecipeInput): Recipe {
  const root = rootOf(input);
  const target = input.layout === 'run_hour' ? `${root}/v1/` : `${root}/${input.dataset}/`;
  return {
    engine: 'glue',
    title: `Glue crawler: ${input.dataset}`,
    language: 'text',
    text: [
      `Crawl ${target} (an S3 target), with these exclude patterns: _sluice/**, **/_SUCCESS.`,
      input.layout === 'run_hour'
        ? 'Each schema_type=<dataset> folder becomes a table; year, month, day and hour become partition columns.'
        : byOrganization(input)
          ? 'The dataset folder becomes a table; date and organization_id become partition columns.'
          : 'The dataset folder becomes a table; date becomes a partition column.',
      `Set "Update the table definition" to add new columns only: columns are only ever added at the end (schema_version ${1}).`,
      'The crawler infers the same columns and types as the Athena table above; prefer that table (partition projection needs no crawler runs).',
    ].join('\n'),
  };
}

function snowflake(input: RecipeInput): Recipe {
  const { dataset } = input;
  const format =
    input.format === 'parquet'
      ? 'TYPE = PARQUET'
      : 'TYPE = JSON COMPRESSION = GZIP STRIP_OUTER_ARRAY = FALSE';
  const path = `@sluice_stage/${datasetFolder(input.layout, dataset)}/`;
  const pattern = input.format === 'parquet' ? '.*[.]parquet' : '.*[.]jsonl[.]gz';
  const copy = [
    `COPY INTO "${dataset}"`,
    `  FROM ${path}`,
    `  FILE_FORMAT = (${format})`,
    '  MATCH_BY_COLUMN_NAME = CASE_SENSITIVE',
    `  PATTERN = '${pattern}'`,
  ].join('\n');
  return {
    engine: 'snowflake',
    title: `Snowflake: ${dataset} (stage, COPY INTO, Snowpipe)`,
    language: 'sql',
    text: [
      `CREATE STAGE IF NOT EXISTS sluice_stage URL = '${rootOf(input)}/' STORAGE_INTEGRATION = <your_storage_integration>;`,
      '',
      `CREATE TABLE IF NOT EXISTS "${dataset}" (`,
      columnList(input, 'snowflake'),
      ');',
      '',
      `${copy};`,
      '',
      `CREATE PIPE IF NOT EXISTS "${dataset}_pipe" AUTO_INGEST = TRUE AS`,
      `${copy};`,
    ].join('\n'),
  };
}

function bigquery(input: RecipeInput): Recipe {
  const { dataset } = input;
  const folder = `${rootOf({ ...input, scheme: input.scheme ?? 'gs' })}/${datasetFolder(input.layout, dataset)}`;
  const options =
    input.format === 'parquet'
      ? ["format = 'PARQUET'"]
      : ["format = 'NEWLINE_DELIMITED_JSON'", "compression = 'GZIP'"];
  return {
    engine: 'bigquery',
    title: `BigQuery: ${dataset} external table`,
    language: 'sql',
    text: [
      `CREATE EXTERNAL TABLE \`<project>.<dataset>.${dataset}\` (`,
      columnList(input, 'bigquery'),
      ')',
      `WITH PARTITION COLUMNS (${partitionsOf(input)
        .filter((name) => name !== 'schema_type')
        .map((name) => `\`${name}\` STRING`)
        .join(', ')})`,
      'OPTIONS (',
      [
        ...options,
        `uris = ['${folder}/*']`,
        `hive_partition_uri_prefix = '${folder}'`,
        'require_hive_partition_filter = false',
      ]
        .map((line) => `  ${line}`)
        .join(',\n'),
      ');',
    ].join('\n'),
  };
}

function databricks(input: RecipeInput): Recipe {
  const { dataset } = input;
  const schema = dataColumns(input)
    .map((column) => `${column.name} ${ENGINE_TYPES.spark[column.type]}`)
    .join(', ');
  return {
    engine: 'databricks',
    title: `Databricks Auto Loader: ${dataset}`,
    language: 'python',
    text: [
      `schema = "${schema}"`,
      '(spark.readStream.format("cloudFiles")',
      `    .option("cloudFiles.format", "${input.format === 'parquet' ? 'parquet' : 'json'}")`,
      `    .option("cloudFiles.partitionColumns", "${partitionsOf(input).join(',')}")`,
      '    .schema(schema)',
      `    .load("${rootOf(input)}/${datasetFolder(input.layout, dataset)}/")`,
      '    .writeStream',
      `    .option("checkpointLocation", "<checkpoint folder>/${dataset}")`,
      '    .trigger(availableNow=True)',
      `    .toTable("${dataset}"))`,
    ].join('\n'),
  };
}

/** DuckDB: a view over the files, typed as the Parquet schema (JSON lines read with the same types). */
function duckdb(input: RecipeInput): Recipe {
  const { dataset } = input;
  const glob = filesGlob(input.duckdbRoot ?? rootOf(input), input);
  const read =
    input.format === 'parquet'
      ? `read_parquet('${glob}', hive_partitioning = true, hive_types_autocast = false, union_by_name = true)`
      : `read_json('${glob}', format = 'newline_delimited', hive_partitioning = true, hive_types_autocast = false, columns = {\n${dataColumns(
          input,
        )
          .map((column) => `    '${column.name}': '${ENGINE_TYPES.duckdb[column.type]}'`)
          .join(',\n')}\n  })`;
  const columns = dataColumns(input).map((column) => `"${column.name}"`);
  const partitions = partitionsOf(input).map((name) => `"${name}"`);
  return {
    engine: 'duckdb',
    title: `DuckDB: ${dataset}`,
    language: 'sql',
    text: `CREATE OR REPLACE VIEW "${dataset}" AS\nSELECT ${[...columns, ...partitions].join(', ')}\nFROM ${read};`,
  };
}

/** Every recipe of one dataset of an export, in {@link RECIPE_ENGINES} order. */
export function recipesFor(input: RecipeInput): Recipe[] {
  if (input.layout === 'run_hour' && !isEventDataset(input.dataset)) return [];
  return [athena(input), glue(input), snowflake(input), bigquery(input), databricks(input), duckdb(input)];
}

/** The schema document written beside the data: the columns with their type in each engine. */
export function schemaDocument(
  dataset: Dataset,
  layout: Layout,
  format: ExportFormat,
  partitioned = false,
): Record<string, unknown> {
  const input = { dataset, layout, format, bucket: '', pathPrefix: '', partitioned };
  return {
    schema_version: 1,
    dataset,
    layout,
    format,
    folder: datasetFolder(layout, dataset),
    partition_columns: partitionsOf(input),
    columns: dataColumns(input).map((column) => ({
      name: column.name,
      type: column.type,
      required: column.required,
      athena: ENGINE_TYPES.athena[column.type],
      snowflake: ENGINE_TYPES.snowflake[column.type],
      bigquery: ENGINE_TYPES.bigquery[column.type],
      spark: ENGINE_TYPES.spark[column.type],
      duckdb: ENGINE_TYPES.duckdb[column.type],
    })),
  };
}

/**
 * What the schema objects of an export depend on (its prefix, layout, format and datasets, and whether its
 * files are partitioned by organisation), as a short hash: the engine writes them again when it differs from
 * the one it last wrote (`schemaWritten`). Unchanged for an export without children.
 */
export function schemaKeyOf(destination: {
  pathPrefix: string;
  layout?: Layout;
  format: ExportFormat;
  datasets: readonly Dataset[];
  childOrganizations?: readonly string[];
}): string {
  const what = JSON.stringify([
    destination.pathPrefix,
    destination.layout ?? 'date',
    destination.format,
    [...destination.datasets].sort(),
    ...(includesChildren(destination) ? ['organization_id'] : []),
  ]);
  return createHash('sha256').update(what).digest('hex').slice(0, 16);
}

/** The file extension of a recipe's text. */
const RECIPE_EXTENSIONS: Record<Recipe['language'], string> = { sql: 'sql', python: 'py', text: 'txt' };

/**
 * The objects written beside the data, per dataset: `<prefix>/_sluice/schema/<dataset>/schema.json` and one
 * `<engine>.<sql|py|txt>` per recipe. Their content is a pure function of the export's bucket, prefix,
 * layout, format and the dataset, so writing them again writes the same bytes.
 */
export function schemaObjects(input: Omit<RecipeInput, 'duckdbRoot'>): { key: string; body: string }[] {
  const folder = `_sluice/schema/${input.dataset}/`;
  const objects = [
    {
      key: withPrefix(input.pathPrefix, `${folder}schema.json`),
      body: `${JSON.stringify(schemaDocument(input.dataset, input.layout, input.format, input.partitioned), null, 2)}\n`,
    },
  ];
  for (const recipe of recipesFor(input)) {
    objects.push({
      key: withPrefix(input.pathPrefix, `${folder}${recipe.engine}.${RECIPE_EXTENSIONS[recipe.language]}`),
      body: `${recipe.text}\n`,
    });
  }
  return objects;
}
