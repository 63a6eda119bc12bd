import { readFileSync } from 'node:fs';
import { Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { SETTING_KEYS } from '../../infra/settings.js';
import { logicalIdOf, type Synthesized, synthesize } from './helpers.js';

/**
 * Issue 28: every stage-dependent behaviour is a setting, and each setting reaches the templates. One stage
 * named neither `dev` nor `prod`, with the settings turned the other way from their defaults.
 */
const CONTEXT = {
  stage: 'live-eu',
  tracing: 'false',
  maxReadRequestUnits: 'events=4000,control=500',
  maxWriteRequestUnits: 'events=2000',
  eventLogPointInTimeRecovery: 'false',
  retainLogGroups: 'true',
};

type Resource = {
  Type: string;
  Properties: Record<string, unknown>;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
};

let live: Synthesized;
let dev: Synthesized;
beforeAll(() => {
  live = synthesize(CONTEXT);
  dev = synthesize();
});

function resources(built: Synthesized, which: 'stateful' | 'stateless', type: string): Resource[] {
  const template = which === 'stateful' ? built.statefulTemplate : built.statelessTemplate;
  return Object.values(template.findResources(type) as Record<string, Resource>);
}

function tableOf(built: Synthesized, name: 'controlTable' | 'eventsTable' | 'subscribersTable'): Resource {
  return built.statefulTemplate.toJSON().Resources[logicalIdOf(built.stateful[name])] as Resource;
}

describe('operable by settings (issue 28)', () => {
  it('logs the workflows at ERROR in a stage that is not a development stage, whatever its name', () => {
    // Act
    const levels = (built: Synthesized) =>
      resources(built, 'stateless', 'AWS::StepFunctions::StateMachine').map(
        (m) => (m.Properties.LoggingConfiguration as { Level: string }).Level,
      );

    // Assess
    expect(levels(live)).toEqual(['ERROR', 'ERROR']);
    expect(levels(dev)).toEqual(['ALL', 'ALL']);
  });

  it('acknowledges cdk-nag SF1 with its reason on each state machine that logs less than ALL, SF2 when untraced', () => {
    // Act
    const acknowledged = (built: Synthesized) =>
      [built.stateless.exportRun.stateMachine, built.stateless.dispatch.stateMachine].map((machine) =>
        Object.assign(
          {},
          ...machine.node
            .findAll()
            .flatMap((c) => c.node.metadata)
            .filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
            .map((m) => m.data as Record<string, string>),
        ),
      ) as Record<string, string>[];
    const rule = (rules: Record<string, string>, id: string) =>
      Object.entries(rules).find(([key]) => key.endsWith(id))?.[1];

    // Assess
    for (const rules of acknowledged(live)) {
      expect(rule(rules, 'SF1')).toMatch(/workflowLogLevel setting/);
      expect(rule(rules, 'SF2')).toMatch(/tracing setting/);
    }
    for (const rules of acknowledged(dev)) {
      expect(rule(rules, 'SF1')).toBeUndefined();
      expect(rule(rules, 'SF2')).toBeUndefined();
    }
  });

  it('passes cdk-nag with the level and tracing turned down (the rules see the real configuration)', () => {
    // Act
    const report = new AwsSolutionsChecks(live.app).validateScope(live.app);
    const findings = report.violations.flatMap((v) =>
      v.violatingResources.map((r) => `${v.ruleName} ${r.constructPath ?? ''}`),
    );

    // Assess
    expect(findings).toEqual([]);
  });

  it('untraces the state machines as well as the functions when tracing is false', () => {
    // Act
    const machines = (built: Synthesized) =>
      resources(built, 'stateless', 'AWS::StepFunctions::StateMachine').map(
        (m) => m.Properties.TracingConfiguration,
      );
    const functions = resources(live, 'stateless', 'AWS::Lambda::Function').map(
      (f) => f.Properties.TracingConfig,
    );

    // Assess
    expect(machines(live)).toEqual([{ Enabled: false }, { Enabled: false }]);
    expect(machines(dev)).toEqual([{ Enabled: true }, { Enabled: true }]);
    expect(functions.length).toBeGreaterThan(0);
    expect(functions.every((config) => JSON.stringify(config) !== '{"Mode":"Active"}')).toBe(true);
  });

  it('caps each table (and its indexes) by its own setting, leaving the others uncapped', () => {
    // Act
    const control = tableOf(live, 'controlTable');
    const events = tableOf(live, 'eventsTable');
    const subscribers = tableOf(live, 'subscribersTable');
    const due = (control.Properties.GlobalSecondaryIndexes as { OnDemandThroughput?: unknown }[])[0];

    // Assess
    expect(events.Properties.OnDemandThroughput).toEqual({
      MaxReadRequestUnits: 4000,
      MaxWriteRequestUnits: 2000,
    });
    expect(control.Properties.OnDemandThroughput).toEqual({ MaxReadRequestUnits: 500 });
    expect(due?.OnDemandThroughput).toEqual({ MaxReadRequestUnits: 500 });
    expect(subscribers.Properties.OnDemandThroughput).toBeUndefined();
  });

  it('turns point-in-time recovery off for the event log only, by the setting', () => {
    // Act
    const pitr = (built: Synthesized, name: 'controlTable' | 'eventsTable' | 'subscribersTable') =>
      tableOf(built, name).Properties.PointInTimeRecoverySpecification;

    // Assess
    expect(pitr(live, 'eventsTable')).toEqual({ PointInTimeRecoveryEnabled: false });
    expect(pitr(live, 'controlTable')).toEqual({ PointInTimeRecoveryEnabled: true });
    expect(pitr(live, 'subscribersTable')).toEqual({ PointInTimeRecoveryEnabled: true });
    expect(pitr(dev, 'eventsTable')).toEqual({ PointInTimeRecoveryEnabled: true });
  });

  it('retains every log group by the setting, the workflow groups under names of this stack instance', () => {
    // Act
    const groups = (built: Synthesized) => resources(built, 'stateless', 'AWS::Logs::LogGroup');
    const workflowNames = groups(live)
      .map((g) => JSON.stringify(g.Properties.LogGroupName ?? ''))
      .filter((name) => name.includes('vendedlogs'));

    // Assess
    expect(groups(live).length).toBeGreaterThanOrEqual(10);
    for (const group of groups(live)) {
      expect([group.DeletionPolicy, group.UpdateReplacePolicy]).toEqual(['Retain', 'Retain']);
    }
    for (const group of groups(dev)) expect(group.DeletionPolicy).toBe('Delete');
    expect(workflowNames).toHaveLength(2);
    for (const name of workflowNames) expect(name).toContain('AWS::StackId');
  });

  it('documents every setting in the settings table of docs/deploy.md', () => {
    // Prepare
    const doc = readFileSync(new URL('../../docs/deploy.md', import.meta.url), 'utf8');
    const table = doc.slice(doc.indexOf('### Settings'), doc.indexOf('### Outputs'));

    // Act
    const rows = table.split('\n').filter((line) => line.startsWith('| `'));
    const undocumented = SETTING_KEYS.filter(
      (key) => !rows.some((row) => row.split('|')[1]?.includes(`\`${key}\``)),
    );

    // Assess
    expect(undocumented).toEqual([]);
  });
});
