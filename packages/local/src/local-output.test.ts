import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { powertoolsRunMetrics } from '@sluice/engine';
import { describe, expect, it } from 'vitest';
import { type ApiCall, startApiServer } from './http-adapter.js';
import { formatRequestLine, type OutputStream, routeLocalOutput } from './local-output.js';

/** A stand-in for process.stdout or process.stderr that keeps what reaches it. */
function terminalStream(): OutputStream & { text: string } {
  const stream = {
    text: '',
    write: ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      stream.text += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      (rest.find((arg) => typeof arg === 'function') as (() => void) | undefined)?.();
      return true;
    }) as OutputStream['write'],
  };
  return stream;
}

const logDir = () => mkdtempSync(join(tmpdir(), 'sluice-logs-'));

describe('routeLocalOutput', () => {
  it('sends what is written to stdout and stderr to a log file, and the printed lines to the terminal', async () => {
    // Prepare
    const stdout = terminalStream();
    const stderr = terminalStream();
    const dir = logDir();
    // Act
    const output = routeLocalOutput({
      verbose: false,
      logDir: dir,
      streams: { stdout, stderr },
      now: new Date('2026-01-02T03:04:05.678Z'),
    });
    stdout.write('{"level":"INFO","message":"window done"}\n');
    stderr.write('{"level":"ERROR","message":"failed"}\n');
    output.print('[export] ws_local/dst_1 email_events: 3 rows, 1 file, 300 B in 12 ms');
    output.printError('stopping API server failed: boom');
    await output.close();
    stdout.write('after close\n');
    // Assess
    expect(output.logFile).toBe(join(dir, 'sluice-2026-01-02T03-04-05-678Z.log'));
    expect(readFileSync(output.logFile as string, 'utf8')).toBe(
      '{"level":"INFO","message":"window done"}\n{"level":"ERROR","message":"failed"}\n',
    );
    expect(stdout.text).toBe(
      '[export] ws_local/dst_1 email_events: 3 rows, 1 file, 300 B in 12 ms\nafter close\n',
    );
    expect(stderr.text).toBe('stopping API server failed: boom\n');
  });

  it('leaves everything on the terminal when verbose', async () => {
    // Prepare
    const stdout = terminalStream();
    const stderr = terminalStream();
    const dir = logDir();
    // Act
    const output = routeLocalOutput({ verbose: true, logDir: dir, streams: { stdout, stderr } });
    stdout.write('{"level":"INFO"}\n');
    output.print('GET /v1/data-exports 200 5 ms');
    await output.close();
    // Assess
    expect(output.logFile).toBeUndefined();
    expect(stdout.text).toBe('{"level":"INFO"}\nGET /v1/data-exports 200 5 ms\n');
    expect(readdirSync(dir)).toEqual([]);
  });

  it('keeps the newest log files only', async () => {
    // Prepare: three older logs and a file that is not a log
    const dir = logDir();
    for (const name of [
      'sluice-2026-01-01.log',
      'sluice-2026-01-02.log',
      'sluice-2026-01-03.log',
      'notes.txt',
    ])
      writeFileSync(join(dir, name), 'old\n');
    // Act
    const output = routeLocalOutput({
      verbose: false,
      logDir: dir,
      streams: { stdout: terminalStream(), stderr: terminalStream() },
      now: new Date('2026-02-01T00:00:00.000Z'),
      keep: 2,
    });
    await output.close();
    // Assess
    expect(readdirSync(dir).sort()).toEqual([
      'notes.txt',
      'sluice-2026-01-03.log',
      basename(output.logFile as string),
    ]);
  });

  it("routes the functions' Powertools JSON logs and EMF metric lines written to the real process streams", async () => {
    // Prepare: what the handlers create at load, bound to process.stdout
    const logger = new Logger({ serviceName: 'sluice-writer' });
    const metrics = powertoolsRunMetrics({ stage: 'local' });
    const dir = logDir();
    // Act
    const output = routeLocalOutput({ verbose: false, logDir: dir });
    try {
      logger.info('window done', { rows: 3 });
      metrics.recordRun({
        workspaceId: 'ws_local',
        destinationId: 'dst_1',
        rows: 3,
        files: 1,
        bytes: 300,
        durationMs: 12,
        lagSecondsByDataset: {},
      });
    } finally {
      await output.close();
    }
    // Assess
    const lines = readFileSync(output.logFile as string, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines).toEqual([
      expect.objectContaining({ level: 'INFO', message: 'window done', service: 'sluice-writer', rows: 3 }),
      expect.objectContaining({
        _aws: expect.objectContaining({ CloudWatchMetrics: expect.any(Array) }),
        RowsExported: 3,
      }),
    ]);
  });
});

describe('the request line of each API call', () => {
  it('is reported by the API server once answered, with the path without its query, for refusals too', async () => {
    // Prepare: handlers that allow a key and answer 201
    const calls: ApiCall[] = [];
    const server = await startApiServer({
      handlers: {
        authorizer: async (event) => ({ isAuthorized: event.identitySource.length > 0 }),
        api: async () => ({ statusCode: 201, body: '{}' }),
      },
      onRequest: (call) => calls.push(call),
    });
    // Act
    try {
      await fetch(`${server.url}/v1/data-exports?limit=5`, {
        method: 'POST',
        headers: { authorization: 'Bearer k' },
      });
      await fetch(`${server.url}/v1/data-exports/dst_1`);
    } finally {
      await server.close();
    }
    // Assess
    expect(calls.map(({ method, path, status }) => ({ method, path, status }))).toEqual([
      { method: 'POST', path: '/v1/data-exports', status: 201 },
      { method: 'GET', path: '/v1/data-exports/dst_1', status: 403 },
    ]);
    for (const call of calls) expect(call.ms).toBeGreaterThanOrEqual(0);
  });

  it('gives method, path, status and whole milliseconds', () => {
    expect(formatRequestLine({ method: 'POST', path: '/v1/data-exports', status: 201, ms: 83.6 })).toBe(
      'POST /v1/data-exports 201 84 ms',
    );
  });
});
