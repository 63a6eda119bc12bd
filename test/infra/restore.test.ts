import { beforeAll, describe, expect, it } from 'vitest';
import { parseSettings, type SettingsError } from '../../infra/settings.js';
import { allStatements, actionsOf, logicalIdOf, type Synthesized, show, synthesize } from './helpers.js';

/**
 * Issue 23, item 5: a point-in-time restore creates tables with new names. The `restoredTables` setting points
 * both stacks at them (docs/runbook.md, "Restore"); these tests prove, on the synthesized templates, that the
 * restored names reach every function's environment, every IAM grant and every alarm, and that nothing in
 * the stateless stack still imports a table from the stateful stack (the export deadlock a restore would hit).
 */
const RESTORED = {
  control: 'sluice-prod-control-0612',
  events: 'sluice-prod-events-0612',
  subscribers: 'sluice-prod-subscribers-0612',
};
const VARIABLES = {
  SLUICE_CONTROL_TABLE: RESTORED.control,
  SLUICE_EVENTS_TABLE: RESTORED.events,
  SLUICE_SUBSCRIBERS_TABLE: RESTORED.subscribers,
};
const PROD = { stage: 'prod', account: '123456789012', region: 'eu-west-1' };

type Resource = { Type: string; Properties: Record<string, unknown>; DeletionPolicy?: string };
let restored: Synthesized;
let original: Synthesized;
let partial: Synthesized;

beforeAll(() => {
  restored = synthesize({
    ...PROD,
    restoredTables: Object.entries(RESTORED)
      .map(([name, table]) => `${name}=${table}`)
      .join(','),
  });
  original = synthesize(PROD);
  partial = synthesize({ ...PROD, restoredTables: { events: RESTORED.events } });
});

function resources(
  built: Synthesized,
  which: 'statefulTemplate' | 'statelessTemplate',
): Record<string, Resource> {
  return built[which].toJSON().Resources as Record<string, Resource>;
}

/** The table variables of every function of the stateless stack, by logical id. */
function tableVariables(built: Synthesized): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const [id, resource] of Object.entries(resources(built, 'statelessTemplate'))) {
    if (resource.Type !== 'AWS::Lambda::Function') continue;
    const variables = (resource.Properties.Environment as { Variables?: Record<string, unknown> } | undefined)
      ?.Variables;
    out[id] = Object.fromEntries(Object.entries(variables ?? {}).filter(([key]) => key.endsWith('_TABLE')));
  }
  return out;
}

/** The resources of every DynamoDB statement of the stateless stack, rendered. */
function dynamoResources(built: Synthesized): string[] {
  return allStatements(built.statelessTemplate)
    .filter((statement) => actionsOf(statement).some((action) => action.startsWith('dynamodb:')))
    .flatMap((statement) => (Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource]))
    .map(show);
}

/** The TableName dimensions of every alarm metric of the stateless stack, rendered. */
function alarmTableNames(built: Synthesized): string[] {
  const names: string[] = [];
  for (const resource of Object.values(resources(built, 'statelessTemplate'))) {
    if (resource.Type !== 'AWS::CloudWatch::Alarm') continue;
    const text = show(resource.Properties);
    for (const match of text.matchAll(/"Name":"TableName","Value":("[^"]*"|\{[^}]*\}+)/g))
      names.push(match[1]!);
  }
  return names;
}

describe('restoredTables points both stacks at restored tables', () => {
  it('gives every function that names a table the restored name, as plain text', () => {
    // Act
    const variables = tableVariables(restored);
    const before = tableVariables(original);

    // Assess: the same functions name the same tables as without the setting, now by the restored names
    expect(Object.keys(variables).sort()).toEqual(Object.keys(before).sort());
    let named = 0;
    for (const [id, vars] of Object.entries(variables)) {
      expect(Object.keys(vars).sort()).toEqual(Object.keys(before[id]!).sort());
      for (const [key, value] of Object.entries(vars)) {
        expect(value).toBe(VARIABLES[key as keyof typeof VARIABLES]);
        named++;
      }
    }
    expect(named).toBeGreaterThanOrEqual(10);
  });

  it('grants every DynamoDB action on the restored tables (and the due index of the restored control table) only', () => {
    // Act
    const granted = dynamoResources(restored);

    // Assess
    expect(granted.length).toBe(dynamoResources(original).length);
    for (const resource of granted) {
      expect(resource).toMatch(new RegExp(`:table/(${Object.values(RESTORED).join('|')})(/index/due)?"`));
    }
    for (const table of Object.values(RESTORED)) expect(granted.join()).toContain(`:table/${table}"`);
  });

  it('watches the restored tables in the throttle alarm', () => {
    const watched = alarmTableNames(restored);
    expect(watched.length).toBe(alarmTableNames(original).length);
    expect(new Set(watched)).toEqual(new Set(Object.values(RESTORED).map((name) => `"${name}"`)));
  });

  it('leaves no reference to a stateful table output in the stateless stack: only the restored names', () => {
    // Act
    const text = show(restored.statelessTemplate.toJSON());

    // Assess
    const tableOutput = /(ExportsOutput|PublishOutput)\w*(Control|Events|Subscribers)Table/;
    expect(tableOutput.test(show(original.statelessTemplate.toJSON()))).toBe(true);
    expect(tableOutput.test(text)).toBe(false);
    for (const table of Object.values(RESTORED)) expect(text).toContain(table);
  });

  it('drops the restored tables from the stateful stack (retained by CloudFormation), outputs the restored names, and keeps the queue, bus, key and archive', () => {
    // Act
    const tables = Object.keys(restored.statefulTemplate.findResources('AWS::DynamoDB::Table'));
    const outputs = restored.statefulTemplate.toJSON().Outputs as Record<string, { Value: unknown }>;
    const before = original.statefulTemplate.findResources('AWS::DynamoDB::Table') as Record<
      string,
      Resource
    >;

    // Assess
    expect(tables).toEqual([]);
    for (const table of Object.values(before)) expect(table.DeletionPolicy).toBe('Retain');
    expect(outputs.ControlTableName?.Value).toBe(RESTORED.control);
    expect(outputs.EventsTableName?.Value).toBe(RESTORED.events);
    expect(outputs.SubscribersTableName?.Value).toBe(RESTORED.subscribers);
    for (const id of ['IngestDeadLetters', 'EventBus', 'SecretsKey', 'ArchiveBucket']) {
      expect(resources(restored, 'statefulTemplate')[id]?.Type).toBeDefined();
    }
  });

  it('restores one table without touching the others', () => {
    const variables = Object.values(tableVariables(partial));
    const events = variables.flatMap((vars) =>
      vars.SLUICE_EVENTS_TABLE === undefined ? [] : [vars.SLUICE_EVENTS_TABLE],
    );
    const control = variables.flatMap((vars) =>
      vars.SLUICE_CONTROL_TABLE === undefined ? [] : [vars.SLUICE_CONTROL_TABLE],
    );
    expect(new Set(events)).toEqual(new Set([RESTORED.events]));
    expect(show(control)).toMatch(/ControlTable/);
    expect(Object.keys(partial.statefulTemplate.findResources('AWS::DynamoDB::Table')).sort()).toEqual([
      'ControlTable',
      'SubscribersTable',
    ]);
    expect(logicalIdOf(partial.stateful.ingestDeadLetters)).toBe('IngestDeadLetters');
  });

  it('refuses an unknown table or a name DynamoDB would not take', () => {
    const problems = (raw: Record<string, unknown>) => {
      try {
        parseSettings(raw, {});
      } catch (error) {
        return (error as SettingsError).problems;
      }
      throw new Error('accepted');
    };
    expect(problems({ restoredTables: 'audit=sluice-audit' })).toEqual([
      'restoredTables: restoredTables names tables: control, events, subscribers',
    ]);
    expect(problems({ restoredTables: 'events=no spaces' })[0]).toMatch(/is not a DynamoDB table name/);
    expect(parseSettings({ restoredTables: '{"control":"c-restored"}' }, {}).restoredTables).toEqual({
      control: 'c-restored',
    });
  });
});
