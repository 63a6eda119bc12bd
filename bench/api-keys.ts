/**
 * The per-key rate limit against DynamoDB Local (`npm run bench`, part `keys`):
 * 1. latency of one `ApiKeyMeter.use` (a conditional UpdateItem returning the item) beside one GetItem of the
 *    same key item (what the authorizer does), measured in the same run, as a ratio;
 * 2. a flood: one key sending as fast as it can through several meters (API function instances) with the
 *    default limit; how many requests were allowed and refused, and how many DynamoDB calls that cost.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { API_KEY_SK, ApiKeyMeter, apiKeyPk, ControlStore, documentClient } from '@sluice/control';
import { countingDocumentClient } from '../packages/control/src/counting-client.test-support.js';

/** What {@link runApiKeyBench} measured. */
export interface ApiKeyBench {
  getItemP50Ms: number;
  meterP50Ms: number;
  flood: {
    instances: number;
    requests: number;
    allowed: number;
    limited: number;
    calls: number;
    seconds: number;
  };
}

/** The default per-key limit of `infra/settings.ts`. */
const DEFAULT_LIMIT = { ratePerSecond: 10, burst: 40 };

function p50(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

export async function runApiKeyBench(
  options: { samples?: number; floodRequests?: number } = {},
): Promise<ApiKeyBench> {
  const samples = options.samples ?? 500;
  const floodRequests = options.floodRequests ?? 4_000;
  // Read once the services' environment is set.
  const { controlTable } = await import('../test/helpers/tables.js');
  const tableName = controlTable.tableName;
  const store = new ControlStore(controlTable);
  const workspaceId = `ws_bench_${Date.now()}`;

  // 1. Latency, alternating the two calls so both see the same load.
  const { apiKey, record } = await store.createApiKey({ workspaceId, role: 'owner' });
  const unlimited = new ApiKeyMeter({ ...controlTable, limit: { ratePerSecond: 1000, burst: 5000 } });
  const get = new GetCommand({ TableName: tableName, Key: { PK: apiKeyPk(record.keyHash), SK: API_KEY_SK } });
  const getTimes: number[] = [];
  const meterTimes: number[] = [];
  for (let i = 0; i < samples; i++) {
    let started = performance.now();
    await documentClient.send(get);
    getTimes.push(performance.now() - started);
    started = performance.now();
    await unlimited.use(apiKey);
    meterTimes.push(performance.now() - started);
  }

  // 2. The flood: one key, several instances, each sending its share in sequence, all at once.
  const flooded = await store.createApiKey({ workspaceId, role: 'owner' });
  const counted = countingDocumentClient();
  const instances = 4;
  const meters = Array.from(
    { length: instances },
    () => new ApiKeyMeter({ client: counted.client, tableName, limit: DEFAULT_LIMIT }),
  );
  let allowed = 0;
  let limited = 0;
  const started = performance.now();
  await Promise.all(
    meters.map(async (meter) => {
      for (let i = 0; i < floodRequests / instances; i++) {
        const use = await meter.use(flooded.apiKey);
        if (use.outcome === 'allowed') allowed++;
        else limited++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return {
    getItemP50Ms: p50(getTimes),
    meterP50Ms: p50(meterTimes),
    flood: { instances, requests: floodRequests, allowed, limited, calls: counted.calls(), seconds },
  };
}

/** Prints the figures, with the modelled cost of the writes (on-demand, $0.625 per million write units). */
export function printApiKeyBench(b: ApiKeyBench, log: (line: string) => void): void {
  log(
    `  one request's meter (conditional UpdateItem) p50 ${b.meterP50Ms.toFixed(2)} ms beside one GetItem ` +
      `p50 ${b.getItemP50Ms.toFixed(2)} ms: ratio ${(b.meterP50Ms / b.getItemP50Ms).toFixed(2)}x`,
  );
  const f = b.flood;
  const ceiling = DEFAULT_LIMIT.burst + DEFAULT_LIMIT.ratePerSecond * f.seconds;
  log(
    `  flood of one key, ${f.requests} requests through ${f.instances} instances in ${f.seconds.toFixed(1)} s ` +
      `(limit ${DEFAULT_LIMIT.ratePerSecond}/s, burst ${DEFAULT_LIMIT.burst}): allowed ${f.allowed} ` +
      `(ceiling ${Math.floor(ceiling)}), refused ${f.limited}, DynamoDB calls ${f.calls} ` +
      `(${(f.calls / f.requests).toFixed(3)} a request; ${(f.calls / Math.max(1, f.allowed)).toFixed(2)} an allowed one)`,
  );
  log(
    '  cost model: one write unit an allowed request, $0.63 per million; refused requests cost ' +
      `${f.limited > 0 ? ((f.calls - f.allowed) / f.limited).toFixed(3) : '0'} calls each`,
  );
}
