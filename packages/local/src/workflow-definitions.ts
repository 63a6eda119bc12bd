import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type CloudFormationTemplate,
  definitionsFromTemplates,
  type WorkflowDefinitions,
} from '@sluice/devstack';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
/** Where the extracted definitions are cached, keyed by a hash of what shapes them. */
const CACHE_DIR = join(REPO_ROOT, '.sluice', 'workflows');
/** Sources the definitions depend on: the CDK app and the error lists its Retry/Catch read. */
const SOURCE_ROOTS = ['infra', 'packages/engine/src', 'packages/sinks/src', 'packages/core/src', 'cdk.json'];

/** Options of {@link loadWorkflowDefinitions}. */
export interface LoadDefinitionsOptions {
  /** Synthesize even when the cache is current. @default false */
  refresh?: boolean;
  /** Progress lines (a synth takes seconds). @default nothing is logged */
  log?: (line: string) => void;
}

/**
 * The ExportRun and Dispatch definitions of the CDK app (`infra/sluice-app.ts`), synthesized in-process with
 * bundling skipped (`sluice:skipBundling`) and cached under `.sluice/workflows/<hash>.json`, where the hash covers
 * the infra sources and the error lists they read; a change to any of them synthesizes again.
 */
export async function loadWorkflowDefinitions(
  options: LoadDefinitionsOptions = {},
): Promise<WorkflowDefinitions> {
  const hash = await sourceHash();
  const cached = join(CACHE_DIR, `${hash}.json`);
  if (!options.refresh) {
    try {
      return JSON.parse(await readFile(cached, 'utf8')) as WorkflowDefinitions;
    } catch {
      // not cached yet
    }
  }
  const started = Date.now();
  const definitions = definitionsFromTemplates(await synthesize());
  options.log?.(`synthesized the CDK app for the workflow definitions in ${Date.now() - started} ms`);
  await mkdir(CACHE_DIR, { recursive: true });
  const temporary = `${cached}.${process.pid}.tmp`;
  await writeFile(temporary, JSON.stringify(definitions));
  await rename(temporary, cached);
  return definitions;
}

/**
 * Builds the CDK app in-process (`buildSluiceApp` of `infra/sluice-app.ts`, with the context of `cdk.json`
 * plus `sluice:skipBundling`), synthesizes it into a scratch folder and returns every stack template.
 */
async function synthesize(): Promise<CloudFormationTemplate[]> {
  const out = join(REPO_ROOT, '.sluice', `cdk.out.${process.pid}.${Date.now()}`);
  const cdkJson = JSON.parse(await readFile(join(REPO_ROOT, 'cdk.json'), 'utf8')) as {
    context?: Record<string, unknown>;
  };
  const [{ App }, { buildSluiceApp }] = await Promise.all([
    import('aws-cdk-lib'),
    import(new URL('../../../infra/sluice-app.js', import.meta.url).href) as Promise<{
      buildSluiceApp: (app: import('aws-cdk-lib').App, env?: Record<string, string | undefined>) => unknown;
    }>,
  ]);
  try {
    const app = new App({ outdir: out, context: { ...cdkJson.context, 'sluice:skipBundling': true } });
    // The placeholder account and region: the definitions' ARNs are replaced anyway.
    buildSluiceApp(app, {});
    const assembly = app.synth();
    return assembly.stacks.map((stack) => stack.template as CloudFormationTemplate);
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}

async function sourceHash(): Promise<string> {
  const hash = createHash('sha256');
  const files: string[] = [];
  const walk = async (path: string): Promise<void> => {
    let entries: import('node:fs').Dirent[];
    try {
      entries = await readdir(path, { withFileTypes: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOTDIR') files.push(path);
      return;
    }
    for (const entry of entries) {
      const full = join(path, entry.name);
      if (entry.isDirectory()) await walk(full);
      else if (/\.(ts|json)$/.test(entry.name) && !entry.name.endsWith('.test.ts')) files.push(full);
    }
  };
  for (const root of SOURCE_ROOTS) await walk(join(REPO_ROOT, root));
  for (const file of files.sort()) {
    hash.update(relative(REPO_ROOT, file));
    hash.update('\0');
    hash.update(await readFile(file));
    hash.update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}
