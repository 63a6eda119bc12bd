/**
 * The first product's files are byte-for-byte those of the version before the dataset catalogue: the JSON
 * lines and Parquet bytes of generated rows of each dataset, and their columns, hash to the values recorded
 * with that version (issue 24).
 */
import { createHash } from 'node:crypto';
import { PARQUET_COLUMNS, ROW_FIELDS, serializeRow, withSnapshotDate } from '@sluice/core';
import { generatedLine, generateEvents, generateSubscribers } from '@sluice/eventlog';
import { describe, expect, it } from 'vitest';
import { encodeParquet } from './parquet-encoder.js';

const FIRST_PRODUCT = ['email_events', 'sms_events', 'custom_events', 'subscribers'] as const;

const sha = (bytes: string | Buffer) => createHash('sha256').update(bytes).digest('hex');

function lines(): Record<(typeof FIRST_PRODUCT)[number], string[]> {
  const out = { email_events: [], sms_events: [], custom_events: [], subscribers: [] } as Record<
    (typeof FIRST_PRODUCT)[number],
    string[]
  >;
  const from = Date.UTC(2026, 11, 1);
  for (const event of generateEvents({ count: 3_000, from, to: from + 3_600_000, workspaceId: 'ws_bytes' })) {
    out[event.dataset].push(generatedLine(event));
  }
  for (const subscriber of generateSubscribers({ count: 500, workspaceId: 'ws_bytes' })) {
    out.subscribers.push(withSnapshotDate(serializeRow('subscribers', subscriber), '2026-12-01'));
  }
  return out;
}

async function parquet(dataset: (typeof FIRST_PRODUCT)[number], rows: string[]): Promise<Buffer> {
  const encoding = encodeParquet(rows, { dataset, compression: 'snappy' });
  const chunks: Buffer[] = [];
  for await (const chunk of encoding.stream) chunks.push(chunk as Buffer);
  await encoding.done;
  return Buffer.concat(chunks);
}

/** Recorded with the version before the catalogue (commit f5afced). */
const EXPECTED: Record<string, string> = {
  'email_events.columns': '73a98caf8a82bdb04a38d3a65b4d40d810955923c179386c804fb38e5704de8d',
  'email_events.jsonl': '093babc22eb0915a93aeb8b5ceddc14cdde958d0b5c7565bd1d5b899be481c89',
  'email_events.parquet': '07136bd5d9ce1cdfbae8a3ff3af7ae27da79e6e3cd14e649efd741da7f4fc7d7',
  'sms_events.columns': '0f546c701cf30ab03b1022ea2e4e956958694510584f92b3a7f65120c84151df',
  'sms_events.jsonl': 'fd674f9c4933b6ec30538abcac6f3195076449561315586413bdfea459628a57',
  'sms_events.parquet': '5d55e046f8e187685f4b1eed550957d0ece8fe52812f3c885a8ff31a7cfab643',
  'custom_events.columns': '0a99786e8950b5ef9fd4d003a43c100b5fd38762a79d7dc879129a4a78792a6a',
  'custom_events.jsonl': '073405074d9a67a16f8f9387ab4a35e1c87a9686100e38420af3b47559104947',
  'custom_events.parquet': 'f86fadd46f74c096f3bbaebfd7bfc35e06cf8fec2033af478c0288c9cc5463d8',
  'subscribers.columns': 'c9616f870236e2ea0dd1b8f7f71a2b0d1afbe26bec69031159319c2fdbf9a744',
  'subscribers.jsonl': 'c05413c1a8d7684b9fe64a1804057cc48e8093c97eb4570e35f5a50e932618c5',
  'subscribers.parquet': '4d32c12f4a13889ccf84e6218ffb473e1fe7380b699470b7675835982d2d4602',
};

describe('the first product files, byte for byte', () => {
  it('keep their columns, JSON lines and Parquet bytes', async () => {
    const generated = lines();
    const actual: Record<string, string> = {};
    for (const dataset of FIRST_PRODUCT) {
      actual[`${dataset}.columns`] = sha(JSON.stringify([ROW_FIELDS[dataset], PARQUET_COLUMNS[dataset]]));
      actual[`${dataset}.jsonl`] = sha(generated[dataset].join('\n'));
      actual[`${dataset}.parquet`] = sha(await parquet(dataset, generated[dataset]));
    }
    expect(actual).toEqual(EXPECTED);
  });
});
