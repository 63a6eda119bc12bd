/**
 * The file formats a destination can choose: gzipped JSON lines (the default) or Parquet, snappy (its
 * default) or zstd. A format is fixed per planned window (the engine stores it with the window), so a
 * retried window is rewritten in the format it started with, under the same names.
 *
 * Pure: no AWS SDK.
 */

/** `format` of a destination. */
export const EXPORT_FORMATS = ['jsonl', 'parquet'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** `compression` of a Parquet destination; `snappy` when the request names none. */
export const PARQUET_COMPRESSIONS = ['snappy', 'zstd'] as const;
export type ParquetCompression = (typeof PARQUET_COMPRESSIONS)[number];

/** `compression` of any destination: JSON lines are always gzip. */
export const COMPRESSIONS = ['gzip', ...PARQUET_COMPRESSIONS] as const;
export type Compression = (typeof COMPRESSIONS)[number];

/** A format with its compression: the only pairs a file can be written in. */
export type FileFormat =
  | { format: 'jsonl'; compression: 'gzip' }
  | { format: 'parquet'; compression: ParquetCompression };

/** The default, and the format of every destination stored before formats existed. */
export const JSONL_GZIP: FileFormat = { format: 'jsonl', compression: 'gzip' };

/** The file extension of each format. */
export const FILE_EXTENSIONS: Record<ExportFormat, string> = {
  jsonl: '.jsonl.gz',
  parquet: '.parquet',
};

/**
 * The file format of a stored destination or planned window: absent or unknown values (older items, and
 * the `jsonl.gz` of destinations stored before formats existed) are JSON lines, gzip; Parquet without a
 * known compression is snappy.
 */
export function fileFormatOf(value: { format?: unknown; compression?: unknown } | undefined): FileFormat {
  if (value?.format !== 'parquet') return JSONL_GZIP;
  const compression = (PARQUET_COMPRESSIONS as readonly unknown[]).includes(value.compression)
    ? (value.compression as ParquetCompression)
    : 'snappy';
  return { format: 'parquet', compression };
}

/**
 * The file format a request asks for: `format` (default `jsonl`) with `compression` (default gzip for
 * JSON lines, snappy for Parquet). Undefined when the pair is not allowed (JSON lines are only gzip, Parquet
 * is snappy or zstd), so the caller can word the error.
 */
export function requestedFileFormat(
  format: ExportFormat | undefined,
  compression: Compression | undefined,
): FileFormat | undefined {
  if ((format ?? 'jsonl') === 'jsonl') {
    return compression === undefined || compression === 'gzip' ? JSONL_GZIP : undefined;
  }
  if (compression === undefined) return { format: 'parquet', compression: 'snappy' };
  return compression === 'gzip' ? undefined : { format: 'parquet', compression };
}

/** True when both name the same format and compression. */
export function sameFileFormat(a: FileFormat, b: FileFormat): boolean {
  return a.format === b.format && a.compression === b.compression;
}
