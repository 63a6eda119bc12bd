import { type App, Tags, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { readSettings, type SluiceSettings } from './settings.js';
import { ConsoleStack } from './console-stack.js';
import { StatefulStack } from './stateful-stack.js';
import { StatelessStack } from './stateless-stack.js';

/** The stacks of one Sluice deployment, and the settings they were built from. */
export interface SluiceStacks {
  readonly settings: SluiceSettings;
  readonly stateful: StatefulStack;
  readonly stateless: StatelessStack;
  /** The web console, in front of the stateless stack's API. */
  readonly console: ConsoleStack;
}

/** The stack ids (and CloudFormation stack names) of a stage: `Sluice-<stage>-Stateful`, `-Stateless`, `-Console`. */
export function stackIds(stage: string): { stateful: string; stateless: string; console: string } {
  return {
    stateful: `Sluice-${stage}-Stateful`,
    stateless: `Sluice-${stage}-Stateless`,
    console: `Sluice-${stage}-Console`,
  };
}

/**
 * Adds the Sluice stacks to `app`, with the settings read from its context (validated; a bad value throws
 * a `SettingsError` naming it). With the context flag `sluice:nag`, cdk-nag's AwsSolutionsChecks run too.
 *
 * The local runtime and the infra tests call this with `sluice:skipBundling` set, to synthesize without
 * esbuild; `infra/app.ts` calls it for `cdk synth` and `cdk deploy`.
 */
export function buildSluiceApp(
  app: App,
  env: Readonly<Record<string, string | undefined>> = process.env,
): SluiceStacks {
  const settings = readSettings(app.node, env);
  const stackEnv = { account: settings.account, region: settings.region };
  const ids = stackIds(settings.stage);

  const stateful = new StatefulStack(app, ids.stateful, {
    env: stackEnv,
    stage: settings.stage,
    terminationProtection: settings.terminationProtection,
    producerAccounts: settings.producerAccounts,
    maxReadRequestUnits: settings.maxReadRequestUnits,
    maxWriteRequestUnits: settings.maxWriteRequestUnits,
    eventLogPointInTimeRecovery: settings.eventLogPointInTimeRecovery,
    domainName: settings.domainName,
    certificateArn: settings.certificateArn,
    archiveRetentionDays: settings.archiveRetentionDays,
    restoredTables: settings.restoredTables,
  });
  const stateless = new StatelessStack(app, ids.stateless, {
    env: stackEnv,
    settings,
    controlTable: stateful.controlTable,
    eventsTable: stateful.eventsTable,
    subscribersTable: stateful.subscribersTable,
    secretsKey: stateful.secretsKey,
    archiveBucket: stateful.archiveBucket,
    archiveReadAccess: stateful.archiveReadAccess,
    archiveWriteAccess: stateful.archiveWriteAccess,
    eventBus: stateful.eventBus,
    ingestDeadLetters: stateful.ingestDeadLetters,
    producerAccounts: stateful.producerAccounts,
    apiDomainName: stateful.apiDomain ? settings.domainName : undefined,
  });
  // The API mapping names the stateful stack's domain by its name only (no export between the stacks, so
  // the domain can be added or removed without a deadlock): the order is made explicit instead.
  stateless.addStackDependency(stateful);
  const consoleStack = new ConsoleStack(app, ids.console, {
    env: stackEnv,
    stage: settings.stage,
    api: stateless.api,
    apiDomainName: stateful.apiDomain ? settings.domainName : undefined,
    skipBundling: settings.skipBundling,
  });
  consoleStack.addStackDependency(stateless);

  Tags.of(app).add('app', 'sluice');
  Tags.of(app).add('sluice:stage', settings.stage);
  if (settings.nag) Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  return { settings, stateful, stateless, console: consoleStack };
}
