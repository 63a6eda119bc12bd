/**
 * `node --import tsx bench/huge-response.ts`: what one connection test costs when the customer's endpoint
 * answers a huge body or trickles one (issue 23). Against a real local HTTP server (`test/helpers/slow-bucket.ts`):
 * a 20 MB and a 100 MB error body to the test write, a 200 MB lifecycle configuration, and a body trickled a byte
 * every 100 ms. Prints, per case, the outcome, the wall time and the peak RSS above the start (sampled every
 * 10 ms). Asserts nothing. `BENCH_HUGE_CASES` (comma-separated: error20,error100,lifecycle200,trickle) picks cases.
 */
import type { BucketLocation } from '@sluice/core';
import { testConnection } from '@sluice/sinks';
import { type SlowAnswer, startSlowBucket } from '../test/helpers/slow-bucket.js';

const MB = 1_000_000;
const CASES: Record<string, { bytes: number; answerFor: (method: string) => SlowAnswer }> = {
  error20: { bytes: 20 * MB, answerFor: () => 'huge-error' },
  error100: { bytes: 100 * MB, answerFor: () => 'huge-error' },
  lifecycle200: { bytes: 200 * MB, answerFor: (method) => (method === 'GET' ? 'huge' : 'answer') },
  trickle: { bytes: 0, answerFor: () => 'body' },
};
const chosen = (process.env.BENCH_HUGE_CASES ?? Object.keys(CASES).join(',')).split(',');

async function measure(name: string): Promise<void> {
  const { bytes, answerFor } = CASES[name]!;
  const server = await startSlowBucket({ intervalMs: 100, answerFor, hugeBytes: bytes });
  const location: BucketLocation = {
    provider: 's3',
    bucket: 'huge-bucket',
    region: 'auto',
    endpoint: server.endpoint,
    pathPrefix: 'exports',
  };
  global.gc?.();
  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 10);
  const started = performance.now();
  let outcome: string;
  try {
    const result = await testConnection(
      location,
      { accessKeyId: 'AKIAHUGEBODY00000000', secretAccessKey: 'huge-body-secret' },
      { now: new Date(), allowedEndpoints: new Set([server.endpoint]) },
    );
    outcome = `passed, warnings: ${result.warnings.map((warning) => warning.message.slice(0, 80)).join('; ')}`;
  } catch (error) {
    outcome = `failed: ${(error as Error).message.slice(0, 110)}`;
  }
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  await server.close();
  const mib = (peak - baseline) / 1024 / 1024;
  console.log(
    `${name.padEnd(13)} ${seconds.toFixed(2).padStart(6)} s  +${mib.toFixed(0).padStart(5)} MiB RSS  ${outcome}`,
  );
}

for (const name of chosen) await measure(name);
