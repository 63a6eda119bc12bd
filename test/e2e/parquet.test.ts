import { type Dataset, startOfUtcDay } from '@sluice/core';
import { generateEvents, generateSubscribers } from '@sluice/eventlog';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalWorkflows } from '@sluice/devstack';
import { jsonLineAsRead, openParquetReader, type ParquetReader } from '../helpers/parquet.js';
import { createLocalExport, type E2eHarness, ingestAll, manualRunInput, startE2eHarness } from './harness.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies, already checked against the OpenAPI by the client
type Json = Record<string, any>;

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const midnight = startOfUtcDay(Date.now() - HOUR_MS - 5 * MINUTE_MS);
const startFromMs = midnight - 2 * HOUR_MS;
const DATASETS = ['email_events', 'sms_events', 'custom_events', 'subscribers'];

let h: E2eHarness;
let workflows: LocalWorkflows;
let reader: ParquetReader;

beforeAll(async () => {
  h = await startE2eHarness();
  workflows = await h.workflows();
  reader = await openParquetReader();
  // 2,400 events of the three kinds on both sides of a UTC midnight, and 120 subscribers.
  const ws = h.ws.workspaceId;
  const events = [
    ...generateEvents({
      count: 2_400,
      workspaceId: ws,
      seed: 11,
      from: startFromMs,
      to: midnight + 20 * MINUTE_MS,
    }),
  ];
  await ingestAll(h.events, ws, events as unknown as Record<string, unknown>[]);
  await h.events.upsertSubscribers(ws, [...generateSubscribers({ count: 120, workspaceId: ws })]);
}, 300_000);

afterAll(async () => {
  await reader?.close();
  expect(await h.close()).toEqual([]);
});

/** The dataset of a file key (`<prefix>/<dataset>/date=…/…`). */
const datasetOf = (prefix: string, key: string) => key.slice(prefix.length + 1).split('/')[0] as Dataset;

describe('a Parquet export on the local runtime, through the synthesized state machines', () => {
  it('writes the files of a JSON lines export as .parquet, each with the same rows, typed', async () => {
    // Prepare: the same data exported twice, as JSON lines (the default) and as Parquet (snappy by default)
    const options = { prefixRoot: 'e2e-parquet/', startFromMs, datasets: DATASETS, frequency: 'hourly' };
    const jsonl = await createLocalExport(h, options);
    const parquet = await createLocalExport(h, { ...options, fileFormat: { format: 'parquet' } });

    // Act
    const outcomes = [
      await workflows.runExportRun(manualRunInput(h, jsonl.id)),
      await workflows.runExportRun(manualRunInput(h, parquet.id)),
    ];

    // Assess: both succeeded; the API shows each format
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['succeeded', 'succeeded']);
    const view = (await h.ws.client.get<Json>(`/data-exports/${parquet.id}`)).body.dataExport;
    expect([view.format, view.compression]).toEqual(['parquet', 'snappy']);
    const jsonlView = (await h.ws.client.get<Json>(`/data-exports/${jsonl.id}`)).body.dataExport;
    expect([jsonlView.format, jsonlView.compression]).toEqual(['jsonl', 'gzip']);
    expect(view.totalRowsExported).toBe(jsonlView.totalRowsExported);
    expect(view.exportedThrough).toEqual(jsonlView.exportedThrough);

    // Assess: the same names below the prefix, .parquet in place of .jsonl.gz, for every dataset
    const below = (prefix: string, key: string) => key.slice(prefix.length + 1);
    const jsonlKeys = (await h.list(jsonl.prefix)).map((object) => below(jsonl.prefix, object.key));
    const parquetKeys = (await h.list(parquet.prefix)).map((object) => below(parquet.prefix, object.key));
    expect(parquetKeys).toEqual(jsonlKeys.map((key) => key.replace(/\.jsonl\.gz$/, '.parquet')));
    const files = jsonlKeys.filter((key) => key.endsWith('.jsonl.gz'));
    expect(new Set(files.map((key) => key.split('/')[0]))).toEqual(new Set(DATASETS));

    // Assess: each Parquet file holds exactly the rows of its JSON lines file, in order
    for (const file of files) {
      const dataset = datasetOf('', `/${file}`);
      const lines = await h.readLines(`${jsonl.prefix}/${file}`);
      const parquetKey = `${parquet.prefix}/${file.replace(/\.jsonl\.gz$/, '.parquet')}`;
      const path = await reader.put(parquetKey, await h.readBytes(parquetKey));
      expect(lines.length, file).toBeGreaterThan(0);
      expect(await reader.rows(path, dataset), file).toEqual(
        lines.map((line) => jsonLineAsRead(line, dataset)),
      );
    }

    // Assess: a warehouse reads typed columns across every file of a dataset
    const smsFiles = parquetKeys.filter((key) => key.startsWith('sms_events/'));
    const smsPaths = [];
    for (const key of smsFiles) {
      smsPaths.push(await reader.put(`all-${key}`, await h.readBytes(`${parquet.prefix}/${key}`)));
    }
    const types = await reader.describe(smsPaths[0] as string);
    expect(types.find((column) => column.name === 'recorded_at')?.type).toBe('TIMESTAMP WITH TIME ZONE');
    expect(types.find((column) => column.name === 'segments')?.type).toBe('BIGINT');
    const [beforeMidnight] = await reader.query(
      `SELECT count(*)::INTEGER AS n FROM read_parquet([${smsPaths.map((p) => `'${p}'`).join(', ')}]) WHERE recorded_at <= make_timestamptz(${midnight * 1000}::BIGINT)`,
    );
    const smsLines = (
      await Promise.all(
        jsonlKeys
          .filter((key) => key.startsWith('sms_events/'))
          .map((key) => h.readLines(`${jsonl.prefix}/${key}`)),
      )
    ).flat();
    expect(beforeMidnight?.n).toBe(
      smsLines.filter(
        (line) => Date.parse((JSON.parse(line) as { recorded_at: string }).recorded_at) <= midnight,
      ).length,
    );
    expect(beforeMidnight?.n).toBeGreaterThan(0);
  }, 300_000);

  it('changes the format by PATCH, and refuses compressions the format does not have', async () => {
    // Prepare
    const { id } = await createLocalExport(h, {
      prefixRoot: 'e2e-parquet/',
      startFromMs,
      datasets: ['email_events'],
      frequency: 'hourly',
      fileFormat: { format: 'parquet', compression: 'zstd' },
    });

    // Act
    const refused = await h.ws.client.patch<Json>(`/data-exports/${id}`, {
      format: 'jsonl',
      compression: 'zstd',
    });
    const changed = await h.ws.client.patch<Json>(`/data-exports/${id}`, { format: 'jsonl' });

    // Assess
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ success: false, code: 'invalid_input' });
    expect(changed.status).toBe(200);
    expect([changed.body.dataExport.format, changed.body.dataExport.compression]).toEqual(['jsonl', 'gzip']);
  });
});
