import { readFileSync } from 'node:fs';
import { App, type CfnElement, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { buildSluiceApp, type SluiceStacks } from '../../infra/sluice-app.js';

/** The feature flags of cdk.json, so the tests synthesize what `cdk synth` synthesizes. */
const CDK_JSON_CONTEXT = (
  JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as {
    context: Record<string, unknown>;
  }
).context;

/** Both stacks, their templates, and the app they were built in. */
export interface Synthesized extends SluiceStacks {
  readonly app: App;
  readonly statefulTemplate: Template;
  readonly statelessTemplate: Template;
}

/** The cdk.json flag that makes CloudFormation's default template rules fail the synth (about 10 s a synth). */
export const CFN_VALIDATION_FLAG = '@aws-cdk/core:validateAgainstDefaultRules';

/**
 * Builds the Sluice app with bundling skipped, the cdk.json context plus `context`, and no
 * CDK_DEFAULT_* variables (so the placeholder account is used whatever the machine's credentials), and
 * synthesizes both templates. CloudFormation's rule validation is off unless `cfnValidation` (one suite,
 * `workflows.test.ts`, synthesizes exactly as `cdk synth` does; the others only read the templates).
 */
export function synthesize(
  context: Record<string, unknown> = {},
  { cfnValidation = false }: { cfnValidation?: boolean } = {},
): Synthesized {
  const { app, ...stacks } = build({ [CFN_VALIDATION_FLAG]: cfnValidation, ...context });
  return {
    ...stacks,
    app,
    statefulTemplate: Template.fromStack(stacks.stateful),
    statelessTemplate: Template.fromStack(stacks.stateless),
  };
}

/**
 * Builds the construct tree only (no synthesis, so no template: fast). Same context rules as
 * {@link synthesize}.
 */
export function build(context: Record<string, unknown> = {}): SluiceStacks & { app: App } {
  const app = new App({ context: { ...CDK_JSON_CONTEXT, 'sluice:skipBundling': true, ...context } });
  return { ...buildSluiceApp(app, {}), app };
}

/** The logical id a construct's CloudFormation resource gets in its stack. */
export function logicalIdOf(construct: IConstruct): string {
  const element = (construct.node.defaultChild ?? construct) as CfnElement;
  return Stack.of(construct).resolve(element.logicalId) as string;
}

/** An IAM policy statement as synthesized. */
export interface Statement {
  Effect: 'Allow' | 'Deny';
  Action: string | string[];
  Resource?: unknown;
  Condition?: Record<string, Record<string, unknown>>;
  Principal?: unknown;
  Sid?: string;
}

/** A statement's actions, always as a list. */
export function actionsOf(statement: Statement): string[] {
  return Array.isArray(statement.Action) ? statement.Action : [statement.Action];
}

/** Every statement of every `AWS::IAM::Policy` attached to the role with logical id `roleId`. */
export function roleStatements(template: Template, roleId: string): Statement[] {
  const policies = template.findResources('AWS::IAM::Policy') as Record<
    string,
    { Properties: { Roles: { Ref: string }[]; PolicyDocument: { Statement: Statement[] } } }
  >;
  return Object.values(policies)
    .filter((policy) => policy.Properties.Roles.some((role) => role.Ref === roleId))
    .flatMap((policy) => policy.Properties.PolicyDocument.Statement);
}

/** Every statement of every IAM policy in a template. */
export function allStatements(template: Template): Statement[] {
  const policies = template.findResources('AWS::IAM::Policy') as Record<
    string,
    { Properties: { PolicyDocument: { Statement: Statement[] } } }
  >;
  return Object.values(policies).flatMap((policy) => policy.Properties.PolicyDocument.Statement);
}

/** Renders a CloudFormation value as text with its intrinsics, for "which resource is this" checks. */
export function show(value: unknown): string {
  return JSON.stringify(value);
}

/** Runs `act` and returns the CloudWatch EMF documents it printed on stdout (Powertools Metrics). */
export function emfOf(act: () => void): Record<string, unknown>[] {
  const lines: string[] = [];
  const write = process.stdout.write;
  process.stdout.write = ((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  }) as typeof process.stdout.write;
  try {
    act();
  } finally {
    process.stdout.write = write;
  }
  return lines.map((line) => JSON.parse(line) as Record<string, unknown>);
}
