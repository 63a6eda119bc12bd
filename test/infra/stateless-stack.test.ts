import { EVENT_DATASETS } from '@sluice/core';
import { powertoolsRunMetrics } from '@sluice/engine';
import type { Template } from 'aws-cdk-lib/assertions';
import { Match } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  actionsOf,
  allStatements,
  emfOf,
  logicalIdOf,
  roleStatements,
  type Statement,
  type Synthesized,
  show,
  synthesize,
} from './helpers.js';

let built: Synthesized;
let t: Template;
beforeAll(() => {
  built = synthesize();
  t = built.statelessTemplate;
});

/** A CloudWatch embedded-metric-format directive. */
interface EmfDirective {
  Namespace: string;
  Dimensions: string[][];
  Metrics: { Name: string }[];
}

type FunctionName = keyof Synthesized['stateless']['functions'];

/** Names what a statement's resource is, from the intrinsic it is built with. */
function resourceLabel(resource: unknown): string {
  const text = show(resource);
  const labels: [RegExp, string][] = [
    [/ControlTableArn.*\/index\/due/, 'control/index/due'],
    [/ControlTableArn/, 'control'],
    [/EventsTableArn/, 'events'],
    [/SubscribersTableArn/, 'subscribers'],
    [/SecretsKeyArn/, 'secretsKey'],
    [/FunctionLogs[0-9A-F]{8}/, 'ownLogGroup'],
    [/IngestDeadLetters/, 'deadLetters'],
    [/IngestBuffer[0-9A-F]{8}/, 'buffer'],
    [/EventBusArn/, 'eventBus'],
    [/ArchiveBucket.*archive\/\*/, 'archive/*'],
    [/ArchiveBucket/, 'archiveBucket'],
    [/iam::\*:role\/\*/, 'customerRoles'],
    [/^"\*"$/, '*'],
  ];
  return labels.find(([pattern]) => pattern.test(text))?.[1] ?? text;
}

/** A role's permissions as `{ resource: sorted actions }`, so a test can compare them exactly. */
function permissions(statements: Statement[]): Record<string, string[]> {
  const out: Record<string, Set<string>> = {};
  for (const statement of statements) {
    expect(statement.Effect).toBe('Allow');
    const resources = Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource];
    for (const resource of resources) {
      const label = resourceLabel(resource);
      out[label] ??= new Set();
      for (const action of actionsOf(statement)) out[label].add(action);
    }
  }
  return Object.fromEntries(Object.entries(out).map(([label, actions]) => [label, [...actions].sort()]));
}

function functionRoleStatements(name: FunctionName): Statement[] {
  return roleStatements(t, logicalIdOf(built.stateless.functions[name].role!));
}

function functionResource(name: FunctionName): {
  Properties: {
    Runtime: string;
    Architectures: string[];
    Environment: { Variables: Record<string, unknown> };
    LoggingConfig: { LogGroup: unknown; LogFormat: string };
    Timeout: number;
    MemorySize: number;
  };
} {
  return t.toJSON().Resources[logicalIdOf(built.stateless.functions[name])];
}

const LOGS = ['logs:CreateLogStream', 'logs:PutLogEvents'];
/** Active tracing (on by default): X-Ray takes no narrower resource. */
const XRAY = ['xray:PutTelemetryRecords', 'xray:PutTraceSegments'];
const CONTEXT_CONDITIONS = {
  'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': ['workspaceId', 'destinationId'] },
  Null: {
    'kms:EncryptionContextKeys': 'false',
    'kms:EncryptionContext:workspaceId': 'false',
    'kms:EncryptionContext:destinationId': 'false',
  },
};

describe('stateless stack: least privilege', () => {
  it.each<[FunctionName, Record<string, string[]>]>([
    [
      'api',
      {
        ownLogGroup: LOGS,
        '*': XRAY,
        control: [
          'dynamodb:BatchWriteItem',
          'dynamodb:ConditionCheckItem',
          'dynamodb:DeleteItem',
          'dynamodb:GetItem',
          'dynamodb:PutItem',
          'dynamodb:Query',
          'dynamodb:UpdateItem',
        ],
        secretsKey: ['kms:Decrypt', 'kms:GenerateDataKey'],
        // A role destination's connection test.
        customerRoles: ['sts:AssumeRole'],
      },
    ],
    ['authorizer', { ownLogGroup: LOGS, '*': XRAY, control: ['dynamodb:GetItem'] }],
    [
      'ingest',
      {
        ownLogGroup: LOGS,
        '*': XRAY,
        // Rows; and the current rows' states with their emitted rows (a read, conditional puts).
        events: ['dynamodb:BatchWriteItem', 'dynamodb:GetItem', 'dynamodb:PutItem'],
        subscribers: ['dynamodb:BatchWriteItem'],
        // Rejected rows and envelopes, kept with their reasons.
        control: ['dynamodb:PutItem'],
        // The on-failure destinations (Lambda sends with the function's role) and the bus events the function
        // gives up, sent by itself.
        deadLetters: ['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage'],
        // The buffer's event source mapping reads with the function's role (CDK's grant for a Kinesis source).
        buffer: [
          'kinesis:DescribeStream',
          'kinesis:DescribeStreamConsumer',
          'kinesis:DescribeStreamSummary',
          'kinesis:GetRecords',
          'kinesis:GetShardIterator',
          'kinesis:ListShards',
          'kinesis:ListStreams',
          'kinesis:SubscribeToShard',
        ],
      },
    ],
    [
      'runControl',
      {
        ownLogGroup: LOGS,
        '*': XRAY,
        control: [
          'dynamodb:BatchWriteItem',
          'dynamodb:ConditionCheckItem',
          'dynamodb:DeleteItem',
          'dynamodb:GetItem',
          'dynamodb:PutItem',
          'dynamodb:Query',
          'dynamodb:UpdateItem',
        ],
        // A destination's failing and recovered notices.
        eventBus: ['events:PutEvents'],
      },
    ],
    [
      'writer',
      {
        ownLogGroup: LOGS,
        '*': XRAY,
        control: [
          'dynamodb:ConditionCheckItem',
          'dynamodb:GetItem',
          'dynamodb:PutItem',
          'dynamodb:Query',
          'dynamodb:UpdateItem',
        ],
        events: ['dynamodb:Query'],
        subscribers: ['dynamodb:Query'],
        secretsKey: ['kms:Decrypt'],
        // A role destination's files.
        customerRoles: ['sts:AssumeRole'],
      },
    ],
    [
      'dispatch',
      {
        ownLogGroup: LOGS,
        '*': XRAY,
        control: [
          'dynamodb:ConditionCheckItem',
          'dynamodb:DeleteItem',
          'dynamodb:GetItem',
          'dynamodb:Query',
          'dynamodb:UpdateItem',
        ],
        'control/index/due': ['dynamodb:Query'],
        events: ['dynamodb:Query'],
        subscribers: ['dynamodb:Query'],
      },
    ],
    [
      'archive',
      {
        ownLogGroup: LOGS,
        '*': XRAY,
        // Workspaces (a Scan), the archive cursors.
        control: ['dynamodb:GetItem', 'dynamodb:Scan', 'dynamodb:UpdateItem'],
        events: ['dynamodb:Query'],
      },
    ],
  ])('%s may do exactly what its code does', (name, expected) => {
    // Act
    const granted = permissions(functionRoleStatements(name));

    // Assess
    expect(granted).toEqual(expected);
  });

  it.each<FunctionName>(['api', 'writer'])(
    'lets only the API and the writer assume roles: %s, sts:AssumeRole alone, on IAM roles of any account but its own',
    (name) => {
      // Act
      const assumers = (Object.keys(built.stateless.functions) as FunctionName[]).filter((fn) =>
        functionRoleStatements(fn).some((statement) =>
          actionsOf(statement).some((a) => a.startsWith('sts:')),
        ),
      );
      const statements = functionRoleStatements(name).filter((statement) =>
        actionsOf(statement).includes('sts:AssumeRole'),
      );
      // Assess
      expect(assumers.sort()).toEqual(['api', 'writer']);
      expect(statements).toHaveLength(1);
      expect(actionsOf(statements[0]!)).toEqual(['sts:AssumeRole']);
      expect(statements[0]!.Resource).toBe('arn:aws:iam::*:role/*');
      expect(statements[0]!.Condition).toEqual({
        StringNotEquals: { 'aws:ResourceAccount': built.stateless.account },
      });
      expect(built.stateless.account).toMatch(/^\d{12}$/);
    },
  );

  it("gives the API its own account id, the one refused as a roleArn's", () => {
    expect(functionResource('api').Properties.Environment.Variables.SLUICE_ACCOUNT_ID).toBe(
      built.stateless.account,
    );
  });

  it('lets the writer only decrypt, and only with the destination context', () => {
    // Act
    const kms = functionRoleStatements('writer').filter((s) =>
      actionsOf(s).some((a) => a.startsWith('kms:')),
    );

    // Assess
    expect(kms).toHaveLength(1);
    expect(actionsOf(kms[0]!)).toEqual(['kms:Decrypt']);
    expect(kms[0]!.Condition).toEqual(CONTEXT_CONDITIONS);
  });

  it('puts the context condition on the API key grant too', () => {
    // Act
    const kms = functionRoleStatements('api').filter((s) => actionsOf(s).some((a) => a.startsWith('kms:')));

    // Assess
    expect(kms.map((s) => s.Condition)).toEqual([CONTEXT_CONDITIONS]);
  });

  it('grants no function any other KMS key use, and no one GenerateDataKey but the API', () => {
    // Act
    const holders = (Object.keys(built.stateless.functions) as FunctionName[]).filter((name) =>
      functionRoleStatements(name).some((s) => actionsOf(s).includes('kms:GenerateDataKey')),
    );

    // Assess
    expect(holders).toEqual(['api']);
    expect(
      allStatements(t)
        .flatMap(actionsOf)
        .filter((a) => /^kms:(Encrypt|ReEncrypt|CreateGrant)/.test(a)),
    ).toEqual([]);
  });

  it('has no wildcard action anywhere, and no managed policy on a function role but the archive access of the stateful stack', () => {
    // Act
    const wildcardActions = allStatements(t)
      .flatMap(actionsOf)
      .filter((action) => action.includes('*'));
    const roles = t.findResources('AWS::IAM::Role') as Record<
      string,
      { Properties: Record<string, unknown> }
    >;
    const functionRoleIds = Object.values(built.stateless.functions).map((f) => logicalIdOf(f.role!));

    // Assess
    expect(wildcardActions).toEqual([]);
    for (const id of functionRoleIds) {
      expect(roles[id]?.Properties.Policies).toBeUndefined();
    }
    const managed = Object.fromEntries(
      Object.entries(built.stateless.functions)
        .map(([name, f]) => [name, roles[logicalIdOf(f.role!)]?.Properties.ManagedPolicyArns] as const)
        .filter(([, arns]) => arns !== undefined)
        .map(([name, arns]) => [name, show(arns).match(/Archive(Read|Write)Access/g)]),
    );
    // The readers of the event archive, and its compaction: the stateful stack's policies, nothing else.
    expect(managed).toEqual({
      writer: ['ArchiveReadAccess'],
      dispatch: ['ArchiveReadAccess'],
      archive: ['ArchiveWriteAccess'],
    });
  });

  it('never puts a "*" resource on a data action', () => {
    // Act
    const dataOnStar = allStatements(t).filter(
      (s) => show(s.Resource) === '"*"' && actionsOf(s).some((a) => /^(dynamodb|kms|s3|sqs|states):/.test(a)),
    );

    // Assess
    expect(dataOnStar).toEqual([]);
  });
});

describe('stateless stack: functions', () => {
  it.each<[FunctionName, string[]]>([
    [
      'api',
      [
        'SLUICE_ACCOUNT_ID',
        'SLUICE_API_KEY_BURST_LIMIT',
        'SLUICE_API_KEY_RATE_LIMIT',
        'SLUICE_CONTROL_TABLE',
        'SLUICE_EVENT_RETENTION_DAYS',
        'SLUICE_KMS_KEY_ID',
        'SLUICE_MAX_EXPORTS_PER_WORKSPACE',
      ],
    ],
    ['authorizer', ['SLUICE_CONTROL_TABLE']],
    [
      'ingest',
      [
        'SLUICE_CONTROL_TABLE',
        'SLUICE_EVENTS_TABLE',
        'SLUICE_EVENT_RETENTION_DAYS',
        'SLUICE_INGEST_DEAD_LETTER_QUEUE_URL',
        'SLUICE_SUBSCRIBERS_TABLE',
      ],
    ],
    ['runControl', ['SLUICE_CONTROL_TABLE', 'SLUICE_EVENT_BUS_NAME', 'SLUICE_EVENT_RETENTION_DAYS']],
    [
      'writer',
      [
        'SLUICE_ARCHIVE_BUCKET',
        'SLUICE_CONTROL_TABLE',
        'SLUICE_EVENTS_TABLE',
        'SLUICE_EVENT_RETENTION_DAYS',
        'SLUICE_KMS_KEY_ID',
        'SLUICE_SUBSCRIBERS_TABLE',
      ],
    ],
    [
      'dispatch',
      [
        'SLUICE_ARCHIVE_BUCKET',
        'SLUICE_CONTROL_TABLE',
        'SLUICE_EVENTS_TABLE',
        'SLUICE_EVENT_RETENTION_DAYS',
        'SLUICE_SUBSCRIBERS_TABLE',
      ],
    ],
    [
      'archive',
      [
        'SLUICE_ARCHIVE_BUCKET',
        'SLUICE_CONTROL_TABLE',
        'SLUICE_EVENTS_TABLE',
        'SLUICE_EVENT_RETENTION_DAYS',
        'SLUICE_SUBSCRIBERS_TABLE',
      ],
    ],
  ])('%s gets the variables of what it is granted, and the Powertools defaults', (name, variables) => {
    // Act
    const fn = functionResource(name);
    const env = fn.Properties.Environment.Variables;

    // Assess
    expect(
      Object.keys(env)
        .filter((key) => key.startsWith('SLUICE_') && key !== 'SLUICE_STAGE')
        .sort(),
    ).toEqual(variables);
    expect(env).toMatchObject({
      POWERTOOLS_SERVICE_NAME: expect.any(String),
      POWERTOOLS_METRICS_NAMESPACE: 'Sluice',
      LOG_LEVEL: 'INFO',
      NODE_OPTIONS: '--enable-source-maps',
      SLUICE_STAGE: 'dev',
    });
    expect(fn.Properties.Runtime).toBe('nodejs22.x');
    expect(fn.Properties.Architectures).toEqual(['arm64']);
    expect(fn.Properties.LoggingConfig.LogFormat).toBe('JSON');
  });

  it('gives every function its own POWERTOOLS_SERVICE_NAME: the service of its log lines', () => {
    // Prepare: the handlers' loggers set no service name, so this variable is the only one (createLogger).
    const functions = Object.values(t.findResources('AWS::Lambda::Function')) as {
      Properties: { Environment?: { Variables?: Record<string, unknown> } };
    }[];

    // Act
    const serviceNames = functions.map((fn) => fn.Properties.Environment?.Variables?.POWERTOOLS_SERVICE_NAME);

    // Assess
    expect(functions.length).toBeGreaterThanOrEqual(6);
    for (const name of serviceNames) expect(name).toMatch(/^[a-z][a-z-]+$/);
    expect(new Set(serviceNames).size).toBe(serviceNames.length);
    expect(functionResource('runControl').Properties.Environment.Variables.POWERTOOLS_SERVICE_NAME).toBe(
      'run-control',
    );
  });

  it('names each table and the key by the stateful stack outputs', () => {
    // Act
    const env = functionResource('writer').Properties.Environment.Variables;

    // Assess
    expect(show(env.SLUICE_CONTROL_TABLE)).toMatch(/ControlTable/);
    expect(show(env.SLUICE_EVENTS_TABLE)).toMatch(/EventsTable/);
    expect(show(env.SLUICE_SUBSCRIBERS_TABLE)).toMatch(/SubscribersTable/);
    expect(show(env.SLUICE_KMS_KEY_ID)).toMatch(/SecretsKeyArn/);
    expect(functionResource('ingest').Properties.Environment.Variables.SLUICE_EVENT_RETENTION_DAYS).toBe(
      '35',
    );
    // The plan reports rows behind the same retention as lost.
    expect(functionResource('runControl').Properties.Environment.Variables.SLUICE_EVENT_RETENTION_DAYS).toBe(
      '35',
    );
  });

  it('fits the writer inside an Express execution', () => {
    // Assess
    expect(functionResource('writer').Properties.Timeout).toBeLessThan(300);
  });

  it('gives every log group the configured retention', () => {
    // Act
    const groups = Object.values(t.findResources('AWS::Logs::LogGroup')) as {
      Properties: { RetentionInDays?: number };
    }[];

    // Assess: seven functions, the access log, two state machines
    expect(groups).toHaveLength(10);
    expect(groups.map((g) => g.Properties.RetentionInDays)).toEqual(Array(10).fill(30));
  });
});

describe('stateless stack: HTTP API', () => {
  it('caches the authorizer at most 60 s, keyed on the Authorization header, with simple responses', () => {
    // Act
    const [authorizer] = Object.values(t.findResources('AWS::ApiGatewayV2::Authorizer')) as {
      Properties: Record<string, unknown>;
    }[];

    // Assess
    expect(authorizer?.Properties).toMatchObject({
      AuthorizerType: 'REQUEST',
      AuthorizerPayloadFormatVersion: '2.0',
      EnableSimpleResponses: true,
      IdentitySource: ['$request.header.Authorization'],
    });
    expect(authorizer?.Properties.AuthorizerResultTtlInSeconds).toBeLessThanOrEqual(60);
    expect(authorizer?.Properties.AuthorizerResultTtlInSeconds).toBeGreaterThan(0);
    expect(show(authorizer?.Properties.AuthorizerUri)).toContain(
      logicalIdOf(built.stateless.functions.authorizer),
    );
  });

  it('routes ANY /v1/{proxy+} and ANY /api/v1/{proxy+} to the API function, behind the authorizer', () => {
    // Act
    const routes = (
      Object.values(t.findResources('AWS::ApiGatewayV2::Route')) as {
        Properties: { RouteKey: string; AuthorizationType: string; AuthorizerId?: unknown };
      }[]
    ).filter((route) => route.Properties.RouteKey.includes('{proxy+}')); // the public ones: openapi-route.test.ts
    const [integration] = Object.values(t.findResources('AWS::ApiGatewayV2::Integration')) as {
      Properties: Record<string, unknown>;
    }[];

    // Assess
    expect(routes.map((r) => r.Properties.RouteKey).sort()).toEqual([
      'ANY /api/v1/{proxy+}',
      'ANY /v1/{proxy+}',
    ]);
    for (const route of routes) {
      expect(route.Properties.AuthorizationType).toBe('CUSTOM');
      expect(route.Properties.AuthorizerId).toBeDefined();
    }
    expect(integration?.Properties).toMatchObject({
      IntegrationType: 'AWS_PROXY',
      PayloadFormatVersion: '2.0',
    });
    expect(show(integration?.Properties.IntegrationUri)).toContain(
      logicalIdOf(built.stateless.functions.api),
    );
  });

  it('throttles the stage and writes JSON access logs', () => {
    // Assess
    t.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 },
      AccessLogSettings: {
        DestinationArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('^ApiAccessLogs'), 'Arn'] },
        Format: Match.stringLikeRegexp('"requestId":"\\$context.requestId"'),
      },
    });
  });

  it('has CORS off unless corsOrigins is set, and no custom domain unless one is set', () => {
    // Act
    const [api] = Object.values(t.findResources('AWS::ApiGatewayV2::Api')) as {
      Properties: Record<string, unknown>;
    }[];

    // Assess
    expect(api?.Properties.CorsConfiguration).toBeUndefined();
    t.resourceCountIs('AWS::ApiGatewayV2::DomainName', 0);
  });
});

describe('stateless stack: workflows, schedule and ingestion', () => {
  it('logs both Express state machines without execution data', () => {
    // Act
    const machines = Object.values(t.findResources('AWS::StepFunctions::StateMachine')) as {
      Properties: {
        StateMachineType: string;
        LoggingConfiguration: { Level: string; IncludeExecutionData: boolean; Destinations: unknown[] };
      };
    }[];

    // Assess
    expect(machines).toHaveLength(2);
    for (const machine of machines) {
      expect(machine.Properties.StateMachineType).toBe('EXPRESS');
      expect(['ALL', 'ERROR']).toContain(machine.Properties.LoggingConfiguration.Level);
      expect(machine.Properties.LoggingConfiguration.IncludeExecutionData).toBe(false);
      expect(machine.Properties.LoggingConfiguration.Destinations).toHaveLength(1);
    }
  });

  it('starts Dispatch every minute', () => {
    // Assess
    t.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      State: 'ENABLED',
      Targets: [Match.objectLike({ Arn: { Ref: logicalIdOf(built.stateless.dispatch.stateMachine) } })],
    });
  });

  it('lets only the Dispatch state machine start ExportRun executions', () => {
    // Act
    const starters = Object.entries(t.findResources('AWS::IAM::Policy') as Record<string, unknown>)
      .filter(([, policy]) => show(policy).includes('states:StartExecution'))
      .map(([id]) => id);

    // Assess
    expect(starters).toHaveLength(2); // the Dispatch machine's role, the schedule's role (on Dispatch)
    const dispatchRole = logicalIdOf(built.stateless.dispatch.stateMachine.role);
    const exportRunArn = logicalIdOf(built.stateless.exportRun.stateMachine);
    const startOnExportRun = allStatements(t).filter(
      (s) => actionsOf(s).includes('states:StartExecution') && show(s.Resource).includes(exportRunArn),
    );
    expect(startOnExportRun).toEqual(
      roleStatements(t, dispatchRole).filter((s) => startOnExportRun.includes(s)),
    );
    expect(startOnExportRun).toHaveLength(1);
  });

  it('routes this account’s sluice.events and sluice.subscribers on the Sluice bus to the ingest buffer, with a dead-letter queue', () => {
    // Act
    const [rule] = Object.values(
      t.findResources('AWS::Events::Rule', { Properties: { EventBusName: Match.anyValue() } }),
    ) as { Properties: { EventBusName: unknown } }[];

    // Assess: the bus is the stateful stack's (a cross-stack reference to its EventBus)
    expect(show(rule?.Properties.EventBusName)).toMatch(/Sluice-dev-Stateful.*EventBus/);
    t.hasResourceProperties('AWS::Events::Rule', {
      EventBusName: Match.anyValue(),
      EventPattern: { account: ['111111111111'], 'detail-type': ['sluice.events', 'sluice.subscribers'] },
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [logicalIdOf(built.stateless.ingestBuffer), 'Arn'] },
          KinesisParameters: { PartitionKeyPath: '$.detail.workspaceId' },
          DeadLetterConfig: { Arn: Match.anyValue() },
          RetryPolicy: { MaximumRetryAttempts: 8, MaximumEventAgeInSeconds: 86_400 },
        }),
      ],
    });
  });
});

describe('stateless stack: the ingest buffer', () => {
  it('reads the buffer in batches: a window, bisect on error, 2 retries, partial batch failures, on-failure to the ingest dead-letter queue', () => {
    // Assess
    t.hasResourceProperties('AWS::Kinesis::Stream', { ShardCount: 1, RetentionPeriodHours: 24 });
    t.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: logicalIdOf(built.stateless.functions.ingest) },
      EventSourceArn: { 'Fn::GetAtt': [logicalIdOf(built.stateless.ingestBuffer), 'Arn'] },
      MaximumBatchingWindowInSeconds: 60,
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 2,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      DestinationConfig: { OnFailure: { Destination: Match.anyValue() } },
    });
    const ingest = Object.values(
      t.findResources('AWS::Lambda::Function', {
        Properties: { Environment: { Variables: { SLUICE_INGEST_DEAD_LETTER_QUEUE_URL: Match.anyValue() } } },
      }),
    );
    expect(ingest).toHaveLength(1);
  });

  it('alarms on the age of the oldest record in the buffer (IteratorAge)', () => {
    expect(
      (built.stateless.observability.alarms.IngestBufferAge?.node.defaultChild as { metricName?: string })
        ?.metricName,
    ).toBe('IteratorAge');
  });
});

describe('stateless stack: alarms and outputs', () => {
  it('has the alarms of docs/runbook.md, each notifying the topic when it fires and when it recovers', () => {
    // Act
    const alarms = built.stateless.observability.alarms;
    const topicId = logicalIdOf(built.stateless.observability.alarmTopic);

    // Assess
    expect(Object.keys(alarms).sort()).toEqual([
      'ApiServerErrors',
      'ArchiveFailures',
      'ArchiveLag',
      'DispatchFailures',
      'DispatchNotRunning',
      'DynamoDbThrottles',
      'ExpiredUnexportedRows',
      'ExportLag',
      'ExportRunTimeouts',
      'IngestAsyncEventAge',
      'IngestBufferAge',
      'IngestDeadLetterAge',
      'IngestDeadLetters',
      'IngestErrors',
      'IngestLag',
      'IngestThrottles',
      'RejectedEvents',
      'SluiceRunFailures',
    ]);
    for (const alarm of Object.values(alarms)) {
      const resource = t.toJSON().Resources[logicalIdOf(alarm)] as { Properties: Record<string, unknown> };
      expect(resource.Properties.AlarmActions).toEqual([{ Ref: topicId }]);
      expect(resource.Properties.OKActions).toEqual([{ Ref: topicId }]);
    }
    t.resourceCountIs('AWS::SNS::Subscription', 0);
  });

  it('alarms on the median run’s ExportLagSeconds, worst event dataset, over the default 60 minutes', () => {
    // Act
    const alarm = t.toJSON().Resources[logicalIdOf(built.stateless.observability.alarms.ExportLag!)] as {
      Properties: {
        Threshold: number;
        ComparisonOperator: string;
        Metrics: {
          Id: string;
          Expression?: string;
          MetricStat?: { Metric: Record<string, unknown>; Stat: string };
        }[];
      };
    };
    const series = alarm.Properties.Metrics.filter((m) => m.MetricStat);

    // Assess
    expect(alarm.Properties.Threshold).toBe(3600);
    expect(alarm.Properties.ComparisonOperator).toBe('GreaterThanThreshold');
    expect(alarm.Properties.Metrics.find((m) => m.Expression)?.Expression).toMatch(/^MAX\(\[/);
    expect(series.map((m) => m.MetricStat?.Metric)).toEqual(
      EVENT_DATASETS.map((dataset) => ({
        Namespace: 'Sluice',
        MetricName: 'ExportLagSeconds',
        Dimensions: [
          { Name: 'Dataset', Value: dataset },
          { Name: 'Stage', Value: 'dev' },
          { Name: 'service', Value: 'sluice-engine' },
        ],
      })),
    );
    expect(series.every((m) => m.MetricStat?.Stat === 'p50')).toBe(true);
  });

  it('watches the very namespace and dimensions the engine publishes ExportLagSeconds under', () => {
    // Act: the engine's Powertools metrics write EMF lines to stdout
    const lines = emfOf(() =>
      powertoolsRunMetrics({ stage: 'dev' }).recordRun({
        workspaceId: 'ws',
        destinationId: 'dest',
        rows: 1,
        files: 1,
        bytes: 1,
        durationMs: 1,
        lagSecondsByDataset: { email_events: 42 },
      }),
    );
    const lag = (lines as (Record<string, unknown> & { _aws: { CloudWatchMetrics: EmfDirective[] } })[]).find(
      (emf) => emf._aws.CloudWatchMetrics.some((d) => d.Metrics.some((m) => m.Name === 'ExportLagSeconds')),
    );

    // Assess
    const directive = lag?._aws.CloudWatchMetrics[0];
    expect(directive?.Namespace).toBe('Sluice');
    expect(directive?.Dimensions?.map((set) => [...set].sort())).toEqual([['Dataset', 'Stage', 'service']]);
    expect(lag?.service).toBe('sluice-engine');
    expect(lag?.Stage).toBe('dev');
    expect(lag?.Dataset).toBe('email_events');
  });

  it('enforces TLS on the alarm topic and the dead-letter queue', () => {
    // Assess
    t.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
    built.statefulTemplate.hasResourceProperties('AWS::SQS::QueuePolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });

  it('outputs the API URL, the state machine ARNs, the topic and the dashboard', () => {
    // Act
    const outputs = Object.keys(t.toJSON().Outputs ?? {});

    // Assess
    expect(outputs).toEqual(
      expect.arrayContaining([
        'ApiUrl',
        'ExportRunStateMachineArn',
        'DispatchStateMachineArn',
        'AlarmTopicArn',
        'DashboardName',
      ]),
    );
    t.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
  });

  it("outputs the two roles a customer's trust policy names: the API's and the writer's", () => {
    const output = t.toJSON().Outputs.RoleAssumerArns;
    const roleIds = (['api', 'writer'] as const).map((name) =>
      logicalIdOf(built.stateless.functions[name].role!),
    );
    expect(output.Value).toEqual({
      'Fn::Join': ['', [{ 'Fn::GetAtt': [roleIds[0], 'Arn'] }, ',', { 'Fn::GetAtt': [roleIds[1], 'Arn'] }]],
    });
  });
});
