import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadRuntimeConfig, readJsonFile, type RuntimeJson, writeJsonFile } from './runtime-config.js';

describe('loadRuntimeConfig', () => {
  let dir: string;
  let file: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-runtime-test-'));
    file = join(dir, 'runtime.json');
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads a deployed environment as it is, leaving the SDK its own settings', () => {
    // Prepare
    const env: NodeJS.ProcessEnv = {
      SLUICE_CONTROL_TABLE: 'deployed-control',
      SLUICE_EVENTS_TABLE: 'deployed-events',
      SLUICE_SUBSCRIBERS_TABLE: 'deployed-subscribers',
      SLUICE_ARCHIVE_BUCKET: 'archive',
      AWS_REGION: 'eu-west-1',
    };
    const before = { ...env };
    // Act
    const config = loadRuntimeConfig(env, file);
    // Assess
    expect(config).toEqual({
      source: 'environment',
      tables: {
        control: { tableName: 'deployed-control' },
        events: { eventsTable: 'deployed-events', subscribersTable: 'deployed-subscribers' },
      },
      archiveBucket: 'archive',
      dynamodb: {},
    });
    expect(env).toEqual(before);
  });

  it('reads the variables of a running npm start, without writing them into the environment', async () => {
    // Prepare
    const runtime: RuntimeJson = {
      pid: process.pid,
      startedAt: new Date().toISOString(),
      dataDir: dir,
      env: {
        SLUICE_CONTROL_TABLE: 'sluice-control',
        SLUICE_EVENTS_TABLE: 'sluice-events',
        SLUICE_SUBSCRIBERS_TABLE: 'sluice-subscribers',
        SLUICE_LOCAL_S3_ENDPOINT: 'http://127.0.0.1:4569',
        AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:8000',
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'local',
        AWS_SECRET_ACCESS_KEY: 'local',
      },
    };
    await writeJsonFile(file, runtime);
    const env: NodeJS.ProcessEnv = {};
    // Act
    const config = loadRuntimeConfig(env, file);
    // Assess
    expect(config).toMatchObject({
      source: 'npm start',
      tables: { control: { tableName: 'sluice-control' } },
      localS3Endpoint: 'http://127.0.0.1:4569',
      dynamodb: {
        endpoint: 'http://127.0.0.1:8000',
        region: 'us-east-1',
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      },
    });
    expect(env).toEqual({});
    expect((await stat(file)).mode & 0o077).toBe(0);
    expect(readJsonFile<RuntimeJson>(file)).toEqual(runtime);
  });

  it('names each missing variable, as the functions do', () => {
    expect(() => loadRuntimeConfig({ SLUICE_CONTROL_TABLE: 'c' }, file)).toThrow(
      'SLUICE_EVENTS_TABLE is not set; SLUICE_SUBSCRIBERS_TABLE is not set',
    );
  });

  it('refuses a runtime file whose npm start is gone, and a missing one', async () => {
    // Prepare: pid 2^22 + 1 is above Linux's pid_max, so no such process
    await writeJsonFile(file, { pid: 4_194_305, startedAt: '', dataDir: dir, env: { A: 'b' } });
    // Act + Assess
    expect(() => loadRuntimeConfig({}, file)).toThrow(/no longer running/);
    expect(() => loadRuntimeConfig({}, join(dir, 'missing.json'))).toThrow(/npm start/);
  });
});
