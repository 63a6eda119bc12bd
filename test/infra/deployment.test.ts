import { powertoolsFailureMetrics } from '@sluice/engine';
import type { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  actionsOf,
  emfOf,
  logicalIdOf,
  roleStatements,
  type Synthesized,
  show,
  synthesize,
} from './helpers.js';

/**
 * What a platform team relies on in production (issue 10), asserted in the synthesized templates of a `dev`
 * stage with the defaults and a `prod` stage configured as docs/deploy.md suggests.
 */
const PROD_CONTEXT = {
  stage: 'prod',
  account: '123456789012',
  region: 'eu-west-1',
  domainName: 'exports.example.com',
  certificateArn: 'arn:aws:acm:eu-west-1:123456789012:certificate/11111111-2222-3333-4444-555555555555',
  producerAccounts: '222222222222,333333333333',
  apiRateLimit: '200',
  apiKeyRateLimit: '20',
  apiKeyBurstLimit: '60',
  maxExportsPerWorkspace: '250',
  reservedConcurrency: 'writer=20,ingest=5',
  maxReadRequestUnits: '4000',
  maxWriteRequestUnits: '2000',
};

type Resource = { Type: string; Properties: Record<string, unknown>; DeletionPolicy?: string };

const stages: Record<'dev' | 'prod', Synthesized> = {} as Record<'dev' | 'prod', Synthesized>;
beforeAll(() => {
  stages.dev = synthesize();
  stages.prod = synthesize(PROD_CONTEXT);
});

function resourcesOf(template: Template, type: string): Record<string, Resource> {
  return template.findResources(type) as Record<string, Resource>;
}

/** An alarm's resource, by its key in `observability.alarms`. */
function alarmOf(built: Synthesized, name: string): Resource {
  const alarm = built.stateless.observability.alarms[name];
  if (!alarm) throw new Error(`no alarm ${name}`);
  return built.statelessTemplate.toJSON().Resources[logicalIdOf(alarm)] as Resource;
}

/** Every metric an alarm reads: `{ namespace, name, dimensions, stat }`. */
function alarmMetrics(
  alarm: Resource,
): { namespace: string; name: string; dimensions: Record<string, unknown>; stat: string }[] {
  const props = alarm.Properties as {
    Namespace?: string;
    MetricName?: string;
    Dimensions?: { Name: string; Value: unknown }[];
    Statistic?: string;
    Metrics?: {
      MetricStat?: {
        Metric: { Namespace: string; MetricName: string; Dimensions?: { Name: string; Value: unknown }[] };
        Stat: string;
      };
    }[];
  };
  const dims = (list: { Name: string; Value: unknown }[] = []) =>
    Object.fromEntries(list.map((d) => [d.Name, d.Value]));
  if (props.MetricName) {
    return [
      {
        namespace: props.Namespace!,
        name: props.MetricName,
        dimensions: dims(props.Dimensions),
        stat: props.Statistic ?? '',
      },
    ];
  }
  return (props.Metrics ?? []).flatMap((m) =>
    m.MetricStat
      ? [
          {
            namespace: m.MetricStat.Metric.Namespace,
            name: m.MetricStat.Metric.MetricName,
            dimensions: dims(m.MetricStat.Metric.Dimensions),
            stat: m.MetricStat.Stat,
          },
        ]
      : [],
  );
}

describe.each(['dev', 'prod'] as const)('the %s stage', (stage) => {
  const built = () => stages[stage];
  const stateless = () => built().statelessTemplate;
  const stateful = () => built().statefulTemplate;

  describe('ingest loses nothing', () => {
    /** How the stateless stack names the stateful stack's dead-letter queue ARN: an import of its output. */
    const queueArnRef = () => show(built().stateless.resolve(built().stateless.ingestDeadLetters.queueArn));

    it('retries a failed event twice, then sends it with its error to the dead-letter queue of the stateful stack', () => {
      // Act
      const [config] = Object.values(resourcesOf(stateless(), 'AWS::Lambda::EventInvokeConfig'));

      // Assess
      expect(queueArnRef()).toMatch(/(Fn::ImportValue|Fn::GetStackOutput).*IngestDeadLettersArn/);
      expect(config?.Properties).toMatchObject({
        FunctionName: { Ref: logicalIdOf(built().stateless.functions.ingest) },
        MaximumRetryAttempts: 2,
        MaximumEventAgeInSeconds: 6 * 3600,
      });
      expect(show(config?.Properties.DestinationConfig)).toBe(
        show({ OnFailure: { Destination: JSON.parse(queueArnRef()) } }),
      );
    });

    it('sends events EventBridge cannot deliver to the same queue, which holds 14 days of 1 MiB messages, retained under a fixed id', () => {
      // Act
      const queue = stateful().toJSON().Resources.IngestDeadLetters as Resource;
      const rule = Object.values(resourcesOf(stateless(), 'AWS::Events::Rule')).find(
        (r) => r.Properties.EventBusName !== undefined,
      );

      // Assess
      expect(logicalIdOf(built().stateful.ingestDeadLetters)).toBe('IngestDeadLetters');
      expect(queue.Properties).toMatchObject({
        MessageRetentionPeriod: 14 * 86_400,
        MaximumMessageSize: 1_048_576,
        SqsManagedSseEnabled: true,
      });
      expect(queue.DeletionPolicy).toBe('Retain');
      expect(show(rule?.Properties.Targets)).toContain(`"DeadLetterConfig":{"Arn":${queueArnRef()}}`);
    });

    it('lets every rule of the Sluice bus, and only those, send to the queue', () => {
      // Act
      const [policy] = Object.values(resourcesOf(stateful(), 'AWS::SQS::QueuePolicy'));
      const statements = (policy!.Properties.PolicyDocument as { Statement: Record<string, unknown>[] })
        .Statement;
      const busRules = statements.find((s) => s.Sid === 'SluiceBusRulesSendDeadLetters');

      // Assess
      expect(busRules).toMatchObject({
        Effect: 'Allow',
        Principal: { Service: 'events.amazonaws.com' },
        Action: 'sqs:SendMessage',
      });
      expect(show(busRules?.Condition)).toMatch(/ArnLike.*aws:SourceArn.*:rule\/.*EventBus.*\/\*/);
    });

    it('alarms on ingest errors and on any message in the queue, and outputs the queue URL from the stateful stack', () => {
      // Act
      const errors = alarmMetrics(alarmOf(built(), 'IngestErrors'));
      const letters = alarmMetrics(alarmOf(built(), 'IngestDeadLetters'));
      const outputs = stateless().toJSON().Outputs as Record<string, { Value: unknown }>;
      const statefulOutputs = stateful().toJSON().Outputs as Record<string, { Value: unknown }>;

      // Assess
      expect(errors).toEqual([
        {
          namespace: 'AWS/Lambda',
          name: 'Errors',
          dimensions: { FunctionName: { Ref: logicalIdOf(built().stateless.functions.ingest) } },
          stat: 'Sum',
        },
      ]);
      expect(letters[0]).toMatchObject({ namespace: 'AWS/SQS', name: 'ApproximateNumberOfMessagesVisible' });
      expect(statefulOutputs.IngestDeadLetterQueueUrl?.Value).toEqual({ Ref: 'IngestDeadLetters' });
      expect(outputs.EventLogRetentionDays?.Value).toBe('35');
    });
  });

  describe('producers', () => {
    it('takes only workspace sources on the ingest rule, from this account and the producer accounts', () => {
      // Act
      const rule = Object.values(resourcesOf(stateless(), 'AWS::Events::Rule')).find(
        (r) => r.Properties.EventBusName !== undefined,
      );

      // Assess
      expect(rule?.Properties.EventPattern).toEqual({
        account: stage === 'prod' ? ['123456789012', '222222222222', '333333333333'] : ['111111111111'],
        source: [{ prefix: 'sluice.workspace.' }],
        'detail-type': ['sluice.events', 'sluice.subscribers'],
      });
    });

    it('retains the bus and outputs its ARN', () => {
      // Act
      const bus = stateful().toJSON().Resources.EventBus as Resource & { UpdateReplacePolicy?: string };

      // Assess
      expect(bus.DeletionPolicy).toBe('Retain');
      expect(bus.UpdateReplacePolicy).toBe('Retain');
      expect(show(stateful().toJSON().Outputs.EventBusArn.Value)).toContain('EventBus');
    });

    it('lets producer accounts put events on the bus under workspace sources only (prod); no policy without them', () => {
      // Act
      const policies = Object.values(resourcesOf(stateful(), 'AWS::Events::EventBusPolicy'));

      // Assess
      if (stage === 'dev') {
        expect(policies).toEqual([]);
        return;
      }
      expect(policies).toHaveLength(1);
      expect(policies[0]?.Properties.Statement).toMatchObject({
        Sid: 'cdk-ProducerAccountsPutWorkspaceEvents',
        Effect: 'Allow',
        Action: 'events:PutEvents',
        Principal: { AWS: ['arn:aws:iam::222222222222:root', 'arn:aws:iam::333333333333:root'] },
        Condition: { StringLike: { 'events:source': 'sluice.workspace.*' } },
      });
    });
  });

  describe('alarms an operator can act on', () => {
    it('pages for no customer-caused failure: no alarm reads failed ExportRun executions or writer errors', () => {
      // Act
      const read = Object.keys(built().stateless.observability.alarms).flatMap((name) =>
        alarmMetrics(alarmOf(built(), name)).map((m) => `${m.namespace}/${m.name} ${show(m.dimensions)}`),
      );
      const writerId = logicalIdOf(built().stateless.functions.writer);
      const exportRunId = logicalIdOf(built().stateless.exportRun.stateMachine);

      // Assess
      expect(read.filter((m) => m.includes(writerId))).toEqual([]);
      expect(
        read.filter((m) => m.startsWith('AWS/States/ExecutionsFailed') && m.includes(exportRunId)),
      ).toEqual([]);
      expect(alarmMetrics(alarmOf(built(), 'SluiceRunFailures'))).toEqual([
        {
          namespace: 'Sluice',
          name: 'RunsFailed',
          dimensions: { Cause: 'sluice', Stage: stage, service: 'sluice-engine' },
          stat: 'Sum',
        },
      ]);
    });

    it('watches the dimensions the engine publishes RunsFailed under, with the cause it classifies', () => {
      // Act
      const [sluiceFailure, customerFailure] = emfOf(() => {
        const metrics = powertoolsFailureMetrics({ stage });
        metrics.recordFailure('States.Timeout');
        metrics.recordFailure('BucketAccessDenied');
      });
      const alarmed = alarmMetrics(alarmOf(built(), 'SluiceRunFailures'))[0]!.dimensions;

      // Assess
      const { _aws, RunsFailed, errorName, ...dimensions } = sluiceFailure as Record<string, unknown>;
      expect(dimensions).toEqual(alarmed);
      expect(RunsFailed).toBe(1);
      expect(errorName).toBe('States.Timeout');
      expect(customerFailure).toMatchObject({ Cause: 'destination', Stage: stage });
    });

    it('notices Dispatch not running: missing data breaches', () => {
      // Act
      const alarm = alarmOf(built(), 'DispatchNotRunning');

      // Assess
      expect(alarm.Properties).toMatchObject({
        Namespace: 'AWS/States',
        MetricName: 'ExecutionsSucceeded',
        Dimensions: [
          { Name: 'StateMachineArn', Value: { Ref: logicalIdOf(built().stateless.dispatch.stateMachine) } },
        ],
        ComparisonOperator: 'LessThanThreshold',
        Threshold: 1,
        TreatMissingData: 'breaching',
      });
    });

    it('counts throttles on the due index as well as on every table', () => {
      // Act
      const metrics = alarmMetrics(alarmOf(built(), 'DynamoDbThrottles'));
      const onDueIndex = metrics.filter((m) => m.dimensions.GlobalSecondaryIndexName === 'due');

      // Assess
      expect(onDueIndex.map((m) => m.name).sort()).toEqual(['ReadThrottleEvents', 'WriteThrottleEvents']);
      expect(show(onDueIndex[0]?.dimensions.TableName)).toContain('ControlTable');
      expect(metrics).toHaveLength(8);
    });

    it('puts the stage dimension on every engine metric an alarm reads', () => {
      // Act
      const engine = Object.keys(built().stateless.observability.alarms)
        .flatMap((name) => alarmMetrics(alarmOf(built(), name)))
        .filter((m) => m.namespace === 'Sluice');

      // Assess
      expect(engine.length).toBeGreaterThan(0);
      expect(engine.every((m) => m.dimensions.Stage === stage)).toBe(true);
    });
  });

  describe('costs and limits', () => {
    it('logs the state machines at ALL in dev and ERROR in prod', () => {
      // Act
      const levels = Object.values(resourcesOf(stateless(), 'AWS::StepFunctions::StateMachine')).map(
        (m) => (m.Properties.LoggingConfiguration as { Level: string }).Level,
      );

      // Assess
      expect(levels).toEqual(stage === 'prod' ? ['ERROR', 'ERROR'] : ['ALL', 'ALL']);
    });

    it('traces every function, and reserves concurrency only where the setting says', () => {
      // Act
      const functions = Object.entries(built().stateless.functions).map(([name, f]) => ({
        name,
        props: (stateless().toJSON().Resources[logicalIdOf(f)] as Resource).Properties,
      }));

      // Assess
      expect(functions.every((f) => show(f.props.TracingConfig) === '{"Mode":"Active"}')).toBe(true);
      expect(
        Object.fromEntries(
          functions
            .filter((f) => f.props.ReservedConcurrentExecutions !== undefined)
            .map((f) => [f.name, f.props.ReservedConcurrentExecutions]),
        ),
      ).toEqual(stage === 'prod' ? { writer: 20, ingest: 5 } : {});
    });

    it('throttles the API stage as set', () => {
      // Assess
      stateless().hasResourceProperties('AWS::ApiGatewayV2::Stage', {
        DefaultRouteSettings:
          stage === 'prod'
            ? { ThrottlingRateLimit: 200, ThrottlingBurstLimit: 200 }
            : { ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 },
      });
    });

    it('gives the API function the per-key rate limit as set', () => {
      // Act
      const api = stateless().toJSON().Resources[logicalIdOf(built().stateless.functions.api)] as Resource;
      const env = (api.Properties.Environment as { Variables: Record<string, unknown> }).Variables;

      // Assess
      expect([env.SLUICE_API_KEY_RATE_LIMIT, env.SLUICE_API_KEY_BURST_LIMIT]).toEqual(
        stage === 'prod' ? ['20', '60'] : ['10', '40'],
      );
    });

    it('gives the API function the most data exports a workspace may have', () => {
      // Act
      const api = stateless().toJSON().Resources[logicalIdOf(built().stateless.functions.api)] as Resource;
      const env = (api.Properties.Environment as { Variables: Record<string, unknown> }).Variables;

      // Assess
      expect(env.SLUICE_MAX_EXPORTS_PER_WORKSPACE).toBe(stage === 'prod' ? '250' : '100');
    });

    it('caps on-demand throughput of each table and index when set (prod)', () => {
      // Act
      const tables = Object.values(resourcesOf(stateful(), 'AWS::DynamoDB::Table'));
      const due = (
        tables.find((t) => t.Properties.GlobalSecondaryIndexes)?.Properties.GlobalSecondaryIndexes as
          | {
              OnDemandThroughput?: unknown;
            }[]
          | undefined
      )?.[0];

      // Assess
      expect(tables).toHaveLength(3);
      const expected =
        stage === 'prod' ? { MaxReadRequestUnits: 4000, MaxWriteRequestUnits: 2000 } : undefined;
      for (const table of tables) expect(table.Properties.OnDemandThroughput).toEqual(expected);
      expect(due?.OnDemandThroughput).toEqual(expected);
    });

    it('closes the execute-api endpoint when a custom domain is set (prod)', () => {
      // Act
      const [api] = Object.values(resourcesOf(stateless(), 'AWS::ApiGatewayV2::Api'));

      // Assess
      expect(api?.Properties.DisableExecuteApiEndpoint).toBe(stage === 'prod' ? true : undefined);
    });
  });

  it('lets only the engine (run-control) put events, on the Sluice bus only, named in its environment', () => {
    // Act
    const puts = Object.entries(built().stateless.functions).flatMap(([name, f]) =>
      roleStatements(stateless(), logicalIdOf(f.role!))
        .filter((statement) => actionsOf(statement).some((action) => action.startsWith('events:')))
        .map((statement) => ({ name, actions: actionsOf(statement), resource: statement.Resource })),
    );
    const runControl = stateless().toJSON().Resources[logicalIdOf(built().stateless.functions.runControl)];

    // Assess
    expect(puts).toHaveLength(1);
    expect(puts[0]).toMatchObject({ name: 'runControl', actions: ['events:PutEvents'] });
    expect(show(puts[0]?.resource)).toMatch(
      /^\{"Fn::GetStackOutput":\{[^}]*"OutputName":"[^"]*EventBusArn[^"]*"\}\}$/,
    );
    expect(show(runControl.Properties.Environment.Variables.SLUICE_EVENT_BUS_NAME)).toMatch(/EventBus/);
  });

  describe('the custom domain outlives the stateless stack', () => {
    it('is in the stateful stack, retained under a fixed logical id (prod); no domain without the setting (dev)', () => {
      // Act
      const domains = resourcesOf(stateful(), 'AWS::ApiGatewayV2::DomainName') as Record<
        string,
        Resource & { UpdateReplacePolicy?: string }
      >;

      // Assess
      expect(Object.keys(resourcesOf(stateless(), 'AWS::ApiGatewayV2::DomainName'))).toEqual([]);
      if (stage === 'dev') {
        expect(domains).toEqual({});
        expect(stateful().toJSON().Outputs.ApiDomainTarget).toBeUndefined();
        return;
      }
      expect(Object.keys(domains)).toEqual(['ApiDomain']);
      expect(domains.ApiDomain?.Properties.DomainName).toBe('exports.example.com');
      expect(domains.ApiDomain?.DeletionPolicy).toBe('Retain');
      expect(domains.ApiDomain?.UpdateReplacePolicy).toBe('Retain');
      expect(stateful().toJSON().Outputs.ApiDomainTarget.Value).toEqual({
        'Fn::GetAtt': ['ApiDomain', 'RegionalDomainName'],
      });
    });

    it('maps the stateless API onto it by name, with no export between the stacks (prod)', () => {
      // Act
      const mappings = Object.values(resourcesOf(stateless(), 'AWS::ApiGatewayV2::ApiMapping'));
      const [api] = Object.keys(resourcesOf(stateless(), 'AWS::ApiGatewayV2::Api'));

      // Assess
      expect(mappings).toHaveLength(stage === 'prod' ? 1 : 0);
      if (stage === 'prod') {
        expect(mappings[0]?.Properties).toEqual({
          ApiId: { Ref: api },
          DomainName: 'exports.example.com',
          Stage: '$default',
        });
        const text = show(stateless().toJSON());
        expect(text.includes('"ApiDomain"'), 'a reference to the stateful domain').toBe(false);
        expect(/"OutputName":"[^"]*ApiDomain/.test(text), 'an output of the domain read across').toBe(false);
        expect(built().stateless.dependencies).toContain(built().stateful);
      }
    });
  });

  it('protects the stateful stack from termination by default', () => {
    // Assess
    expect(built().stateful.terminationProtection).toBe(true);
  });
});
