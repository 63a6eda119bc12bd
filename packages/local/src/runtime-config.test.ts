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

  it('keeps a deployed environment as it is', () => {
    // Prepare
    const env: NodeJS.ProcessEnv = { SLUICE_CONTROL_TABLE: 'deployed-control' };
    // Act
    const source = loadRuntimeConfig(env, file);
    // Assess
    expect(source).toBe('environment');
    expect(env).toEqual({ SLUICE_CONTROL_TABLE: 'deployed-control' });
  });

  it('copies the variables of a running npm start', async () => {
    // Prepare
    const runtime: RuntimeJson = {
      pid: process.pid,
      startedAt: new Date().toISOString(),
      dataDir: dir,
      env: { SLUICE_CONTROL_TABLE: 'sluice-control', AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:8000' },
    };
    await writeJsonFile(file, runtime);
    const env: NodeJS.ProcessEnv = {};
    // Act
    const source = loadRuntimeConfig(env, file);
    // Assess
    expect(source).toBe('npm start');
    expect(env).toEqual(runtime.env);
    expect((await stat(file)).mode & 0o077).toBe(0);
    expect(readJsonFile<RuntimeJson>(file)).toEqual(runtime);
  });

  it('refuses a runtime file whose npm start is gone, and a missing one', async () => {
    // Prepare: pid 2^22 + 1 is above Linux's pid_max, so no such process
    await writeJsonFile(file, { pid: 4_194_305, startedAt: '', dataDir: dir, env: { A: 'b' } });
    // Act + Assess
    expect(() => loadRuntimeConfig({}, file)).toThrow(/no longer running/);
    expect(() => loadRuntimeConfig({}, join(dir, 'missing.json'))).toThrow(/npm start/);
  });
});
