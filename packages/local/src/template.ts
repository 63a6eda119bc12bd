import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { StateMachineDefinition } from 'aws-local-stepfunctions';

/** The two workflows of the CDK app, as Amazon States Language. */
export interface WorkflowDefinitions {
  exportRun: StateMachineDefinition;
  dispatch: StateMachineDefinition;
}

/** The part of a CloudFormation template read here. */
export interface CloudFormationTemplate {
  Resources?: Record<
    string,
    { Type?: string; Properties?: Record<string, unknown>; Metadata?: Record<string, unknown> }
  >;
}

/** Metadata key the workflow constructs set (`infra/constructs/export-run-workflow.ts`). */
const WORKFLOW_METADATA_KEY = 'sluice:workflow';
const WORKFLOW_KEYS = { ExportRun: 'exportRun', Dispatch: 'dispatch' } as const;
const ACCOUNT = '000000000000';
const REGION = 'us-east-1';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
/** Where the extracted definitions are cached, keyed by a hash of what shapes them. */
const CACHE_DIR = join(REPO_ROOT, '.sluice', 'workflows');
/** Sources the definitions depend on: the CDK app and the error lists its Retry/Catch read. */
const SOURCE_ROOTS = ['infra', 'packages/engine/src', 'packages/sinks/src', 'packages/core/src', 'cdk.json'];

/**
 * Finds the ExportRun and Dispatch state machines in synthesized templates (by the `sluice:workflow`
 * metadata of their resources) and resolves their `DefinitionString`: `Fn::Join` of strings and
 * `Ref`/`Fn::GetAtt` tokens, each token replaced by a placeholder ARN naming the referenced logical id.
 *
 * @throws when a workflow is missing, present twice, or its definition uses an unsupported function
 */
export function definitionsFromTemplates(templates: readonly CloudFormationTemplate[]): WorkflowDefinitions {
  const found: Partial<Record<keyof WorkflowDefinitions, StateMachineDefinition>> = {};
  for (const template of templates) {
    const resources = template.Resources ?? {};
    for (const [logicalId, resource] of Object.entries(resources)) {
      if (resource.Type !== 'AWS::StepFunctions::StateMachine') continue;
      const tag = resource.Metadata?.[WORKFLOW_METADATA_KEY];
      if (tag !== 'ExportRun' && tag !== 'Dispatch') continue;
      const key = WORKFLOW_KEYS[tag];
      if (found[key]) throw new Error(`two ${tag} state machines in the templates`);
      const text = resolveIntrinsic(resource.Properties?.DefinitionString, resources, logicalId);
      if (typeof text !== 'string') throw new Error(`${logicalId}: DefinitionString is not a string`);
      found[key] = JSON.parse(text) as StateMachineDefinition;
    }
  }
  if (!found.exportRun || !found.dispatch) {
    const missing = (['exportRun', 'dispatch'] as const).filter((k) => !found[k]);
    throw new Error(`no ${missing.join(' and ')} state machine in the synthesized templates`);
  }
  return { exportRun: found.exportRun, dispatch: found.dispatch };
}

/** Placeholder value of a `Ref` or `Fn::GetAtt` on a resource of the template. */
function placeholder(
  logicalId: string,
  resources: CloudFormationTemplate['Resources'],
  attribute?: string,
): string {
  switch (logicalId) {
    case 'AWS::Partition':
      return 'aws';
    case 'AWS::Region':
      return REGION;
    case 'AWS::AccountId':
      return ACCOUNT;
    case 'AWS::URLSuffix':
      return 'amazonaws.com';
    default:
      break;
  }
  const type = resources?.[logicalId]?.Type;
  if (type === 'AWS::Lambda::Function' && (attribute === undefined || attribute === 'Arn')) {
    return `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${logicalId}`;
  }
  if (type === 'AWS::StepFunctions::StateMachine' && (attribute === undefined || attribute === 'Arn')) {
    return `arn:aws:states:${REGION}:${ACCOUNT}:stateMachine:${logicalId}`;
  }
  if (type === 'AWS::StepFunctions::StateMachine' && attribute === 'Name') return logicalId;
  return `${logicalId}${attribute ? `.${attribute}` : ''}`;
}

function resolveIntrinsic(
  value: unknown,
  resources: CloudFormationTemplate['Resources'],
  where: string,
): string | unknown {
  if (typeof value === 'string') return value;
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value);
  if (entries.length !== 1) throw new Error(`${where}: unexpected value in DefinitionString`);
  const [fn, arg] = entries[0]!;
  switch (fn) {
    case 'Fn::Join': {
      const [separator, parts] = arg as [string, unknown[]];
      return parts.map((part) => resolveIntrinsic(part, resources, where)).join(separator);
    }
    case 'Ref':
      return placeholder(arg as string, resources);
    case 'Fn::GetAtt': {
      const [id, attribute] = Array.isArray(arg)
        ? (arg as [string, string])
        : (String(arg).split('.') as [string, string]);
      return placeholder(id, resources, attribute);
    }
    case 'Fn::ImportValue':
      return `imported-${JSON.stringify(arg)}`;
    default:
      throw new Error(`${where}: ${fn} in DefinitionString is not supported by the local runtime`);
  }
}

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
