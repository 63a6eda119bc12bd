/**
 * One configuration path: no package reads the environment (only entry points do, once, validated), and no
 * function's environment can switch the endpoint checks off.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { apiEnvironment } from '../../functions/api/config.js';
import { archiveEnvironment } from '../../functions/archive/config.js';
import { authorizerEnvironment } from '../../functions/authorizer/config.js';
import { dispatchEnvironment } from '../../functions/dispatch/config.js';
import { ingestEnvironment } from '../../functions/ingest/config.js';
import { runControlEnvironment } from '../../functions/run-control/config.js';
import { writerEnvironment } from '../../functions/writer/config.js';
import { logicalIdOf, type Synthesized, synthesize } from './helpers.js';

/** Set on every function by the stack; read only where declared (run-control's metrics dimension). */
const COMMON = ['SLUICE_STAGE'];

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Each function's declared variables: what its `handler.ts` reads, and all it reads. */
const ENVIRONMENTS: Record<string, z.ZodObject> = {
  api: apiEnvironment,
  authorizer: authorizerEnvironment,
  ingest: ingestEnvironment,
  runControl: runControlEnvironment,
  writer: writerEnvironment,
  dispatch: dispatchEnvironment,
  archive: archiveEnvironment,
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === 'node_modules') return [];
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') && !name.includes('.test') && !name.includes('.test-support') ? [path] : [];
  });
}

describe('one configuration path', () => {
  it('no package reads process.env; of the functions, only handler.ts reads it (its config validates it)', () => {
    // Prepare: every source file of the domain packages (the local runtime, its dev stack and the CLI are entry
    // points) and of the functions
    const packages = readdirSync(join(ROOT, 'packages')).filter(
      (name) => name !== 'local' && name !== 'devstack' && name !== 'cli',
    );
    const files = [
      ...packages.flatMap((name) => sourceFiles(join(ROOT, 'packages', name, 'src'))),
      ...sourceFiles(join(ROOT, 'functions')),
    ];
    expect(files.length).toBeGreaterThan(50);

    // Act
    const readers = files
      .filter((file) => /process\.env\b/.test(readFileSync(file, 'utf8').replace(/^\s*(\/\/|\*).*$/gm, '')))
      .map((file) => relative(ROOT, file))
      .sort();

    // Assess
    expect(readers).toEqual(readers.filter((file) => /^functions\/[a-z-]+\/handler\.ts$/.test(file)));
    expect(readers).toContain('functions/api/handler.ts');
  });
});

describe('endpoint checks', () => {
  let built: Synthesized;
  beforeAll(() => {
    built = synthesize();
  }, 120_000);

  it('no function environment can switch them off: each function gets only the variables its config declares', () => {
    // Prepare
    const resources = built.statelessTemplate.toJSON().Resources as Record<
      string,
      { Properties: { Environment?: { Variables?: Record<string, unknown> } } }
    >;
    const functions = built.stateless.functions as Record<string, Parameters<typeof logicalIdOf>[0]>;
    expect(Object.keys(functions).sort()).toEqual(Object.keys(ENVIRONMENTS).sort());

    for (const [name, schema] of Object.entries(ENVIRONMENTS)) {
      // Act
      const variables = Object.keys(
        resources[logicalIdOf(functions[name] as Parameters<typeof logicalIdOf>[0])]?.Properties.Environment
          ?.Variables ?? {},
      );
      const declared = Object.keys(schema.shape);

      const required = declared.filter((variable) => !schema.shape[variable]?.safeParse(undefined).success);

      // Assess: no undeclared Sluice variable reaches a function, every required one does, none is about endpoints
      expect(
        variables.filter(
          (variable) =>
            variable.startsWith('SLUICE_') && !declared.includes(variable) && !COMMON.includes(variable),
        ),
        name,
      ).toEqual([]);
      expect(
        required.filter((variable) => !variables.includes(variable)),
        name,
      ).toEqual([]);
      expect(
        declared.filter((variable) => /ENDPOINT|ALLOW/.test(variable)),
        name,
      ).toEqual([]);
      expect(
        variables.filter((variable) => /ENDPOINT|ALLOW/.test(variable)),
        name,
      ).toEqual([]);
    }
  });
});
