import { randomBytes } from 'node:crypto';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { printBenchResult, runBenchChild } from './child.js';

/**
 * The cost of one window of a parent organisation with `children` children (issue 27, item 5): one export of the
 * parent that includes every child (`["*"]`) beside one export per organisation (the parent's own and one in each
 * child's workspace), the same rows, in the same run. Each side runs its ExportRun executions through the
 * synthesized definition (a manual run each), in a child process whose DynamoDB and S3 requests pass through
 * counting proxies (started before any SDK client exists), and whose Lambda invocations are the Task calls of
 * the local runner. Prints requests, invocations and time per window, and the ratios.
 */

/** What one side cost. */
export interface OrganizationsCost {
  exports: number;
  executions: number;
  invocations: number;
  dynamodbRequests: number;
  s3Requests: number;
  rows: number;
  ms: number;
}

/** The figures of {@link runOrganizationsBench}. */
export interface OrganizationsBenchResult {
  children: number;
  rowsPerOrganization: number;
  parent: OrganizationsCost;
  separate: OrganizationsCost;
}

interface ChildTask {
  children: number;
  rowsPerOrganization: number;
}

/** A forwarding proxy that counts the requests it passes on. */
async function countingProxy(
  target: string,
): Promise<{ origin: string; count: () => number; close: () => void }> {
  let requests = 0;
  const destination = new URL(target);
  const server = createServer((incoming, outgoing) => {
    requests += 1;
    const forwarded = httpRequest(
      {
        host: destination.hostname,
        port: destination.port,
        method: incoming.method,
        path: incoming.url,
        headers: incoming.headers,
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forwarded.on('error', () => outgoing.destroy());
    incoming.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { origin: `http://127.0.0.1:${port}`, count: () => requests, close: () => server.close() };
}

async function child(task: ChildTask): Promise<void> {
  // The proxies first: every SDK client made after this goes through them.
  const dynamodb = await countingProxy(process.env.AWS_ENDPOINT_URL_DYNAMODB as string);
  const s3 = await countingProxy(process.env.SLUICE_LOCAL_S3_ENDPOINT as string);
  process.env.AWS_ENDPOINT_URL_DYNAMODB = dynamodb.origin;
  process.env.SLUICE_LOCAL_S3_ENDPOINT = s3.origin;
  const [control, core, eventlog, { localWorkflows }, { SecretSealer }] = await Promise.all([
    import('@sluice/control'),
    import('@sluice/core'),
    import('@sluice/eventlog'),
    import('@sluice/local'),
    import('@sluice/secrets'),
  ]);
  const { controlTable, eventTables, kmsKey } = await import('../test/helpers/tables.js');
  const store = new control.ControlStore(controlTable);
  const organizations = new control.OrganizationStore(controlTable);
  const sealer = new SecretSealer(kmsKey);
  const writer = new eventlog.EventLogWriter({ ...eventTables, explicitRecordedAt: 'unchecked' });
  const tag = randomBytes(4).toString('hex');
  const toMs = core.gridExportLimit(Date.now(), 'hourly');
  const fromMs = toMs - core.HOUR_MS;
  const parent = `ws_benchparent_${tag}`;
  const children = Array.from({ length: task.children }, (_, i) => `ws_benchchild_${tag}_${i}`);
  for (const [index, workspace] of [parent, ...children].entries()) {
    await store.ensureWorkspace(workspace);
    const rows = [
      ...eventlog.generateDatasetRows({
        dataset: 'click_events',
        count: task.rowsPerOrganization,
        workspaceId: workspace,
        seed: index + 1,
        from: fromMs,
        to: toMs,
      }),
    ] as unknown as Record<string, unknown>[];
    await writer.ingestEvents(workspace, rows);
    if (workspace !== parent) await organizations.link(parent, workspace, new Date(fromMs - core.HOUR_MS));
  }
  const startFrom = new Date(fromMs).toISOString();
  const create = async (workspaceId: string, childOrganizations?: string[]) => {
    const id = `exp_${randomBytes(12).toString('hex')}`;
    const destination = {
      ...core.newDestination({
        workspaceId,
        id,
        name: 'bench',
        provider: 's3',
        bucket: 'local-exports',
        region: 'us-east-1',
        endpoint: s3.origin,
        pathPrefix: `bench-orgs/${tag}/${id}`,
        accessKeyId: 'S3RVER',
        secret: await sealer.seal('S3RVER', { workspaceId, destinationId: id }),
        datasets: ['click_events'],
        frequency: 'hourly',
        startFrom,
        now: new Date(fromMs),
        ...(childOrganizations !== undefined ? { childOrganizations } : {}),
      }),
      status: 'idle' as const,
      manualRunQueued: false,
    };
    // The schema objects beside the data count as written: a window's steady cost, not an export's first.
    await store.createDestination({ ...destination, schemaWritten: core.schemaKeyOf(destination) });
    return { workspaceId, destinationId: id };
  };
  const parentExport = await create(parent, ['*']);
  const separateExports = [];
  for (const workspace of [parent, ...children]) separateExports.push(await create(workspace));

  let invocations = 0;
  const workflows = await localWorkflows({
    intercept: (_state, input, invoke) => {
      invocations += 1;
      return invoke(input);
    },
  });
  const measure = async (
    exports: { workspaceId: string; destinationId: string }[],
  ): Promise<OrganizationsCost> => {
    const before = { invocations, dynamodb: dynamodb.count(), s3: s3.count() };
    const started = performance.now();
    let rows = 0;
    let executions = 0;
    for (const target of exports) {
      for (let again = true; again; ) {
        const outcome = await workflows.runExportRun({ ...target, trigger: 'manual' });
        if (outcome.status !== 'succeeded') throw new Error(`a bench run ended ${outcome.status}`);
        executions += 1;
        rows += outcome.rows;
        again = outcome.runAgain;
      }
    }
    return {
      exports: exports.length,
      executions,
      invocations: invocations - before.invocations,
      dynamodbRequests: dynamodb.count() - before.dynamodb,
      s3Requests: s3.count() - before.s3,
      rows,
      ms: performance.now() - started,
    };
  };
  const separate = await measure(separateExports);
  const parentCost = await measure([parentExport]);
  dynamodb.close();
  s3.close();
  const result: OrganizationsBenchResult = {
    children: task.children,
    rowsPerOrganization: task.rowsPerOrganization,
    parent: parentCost,
    separate,
  };
  printBenchResult(result);
  process.exit(0);
}

/** Runs the bench in a child process (fresh SDK clients behind the counting proxies). */
export function runOrganizationsBench(task: ChildTask): Promise<OrganizationsBenchResult> {
  const script = fileURLToPath(import.meta.url);
  return runBenchChild<OrganizationsBenchResult>(
    'organisations bench child',
    process.execPath,
    ['--openssl-legacy-provider', '--import', 'tsx', script],
    {
      SLUICE_BENCH_ORGANIZATIONS_CHILD: JSON.stringify(task),
      POWERTOOLS_METRICS_DISABLED: 'true',
      POWERTOOLS_LOG_LEVEL: 'WARN',
    },
  );
}

/** Prints the two sides and their ratios. */
export function printOrganizationsBench(result: OrganizationsBenchResult, log: (line: string) => void): void {
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  const line = (name: string, cost: OrganizationsCost) =>
    log(
      `  ${name.padEnd(44)} ${String(cost.exports).padStart(3)} export(s), ${String(cost.executions).padStart(3)} ExportRun(s), ` +
        `${fmt(cost.invocations).padStart(4)} Lambda invocations, ${fmt(cost.dynamodbRequests).padStart(6)} DynamoDB and ` +
        `${fmt(cost.s3Requests).padStart(5)} S3 requests, ${fmt(cost.rows)} rows, ${(cost.ms / 1000).toFixed(1)} s`,
    );
  line(`one export of the parent with ["*"]`, result.parent);
  line(`one export per organisation (${result.children + 1})`, result.separate);
  const ratio = (a: number, b: number) => (b === 0 ? 'n/a' : `${(a / b).toFixed(1)}x`);
  log(
    `  ratio separate / parent: Lambda invocations ${ratio(result.separate.invocations, result.parent.invocations)}, ` +
      `DynamoDB requests ${ratio(result.separate.dynamodbRequests, result.parent.dynamodbRequests)}, ` +
      `S3 requests ${ratio(result.separate.s3Requests, result.parent.s3Requests)}, ` +
      `time ${ratio(result.separate.ms, result.parent.ms)}`,
  );
}

if (
  process.env.SLUICE_BENCH_ORGANIZATIONS_CHILD !== undefined &&
  process.argv[1] === fileURLToPath(import.meta.url)
) {
  child(JSON.parse(process.env.SLUICE_BENCH_ORGANIZATIONS_CHILD) as ChildTask).catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
