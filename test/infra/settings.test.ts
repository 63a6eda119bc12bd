import { App } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import {
  PLACEHOLDER_ACCOUNT,
  PLACEHOLDER_REGION,
  parseSettings,
  readSettings,
  SettingsError,
} from '../../infra/settings.js';
import { buildSluiceApp } from '../../infra/sluice-app.js';

/** The problems a bad settings object is refused with. */
function problemsOf(raw: Record<string, unknown>): readonly string[] {
  try {
    parseSettings(raw, {});
  } catch (error) {
    expect(error).toBeInstanceOf(SettingsError);
    return (error as SettingsError).problems;
  }
  throw new Error(`settings ${JSON.stringify(raw)} were accepted`);
}

describe('settings', () => {
  it('defaults every setting, with the placeholder environment when nothing names one', () => {
    // Act
    const settings = parseSettings({}, {});

    // Assess
    expect(settings).toEqual({
      stage: 'dev',
      domainName: undefined,
      certificateArn: undefined,
      logRetentionDays: 30,
      eventLogRetentionDays: 35,
      archiveRetentionDays: 731,
      writerConcurrency: 10,
      exportLagAlarmMinutes: 60,
      ingestLagAlarmMinutes: 15,
      rejectedEventsAlarmThreshold: 10,
      restoredTables: {},
      alarmEmail: undefined,
      corsOrigins: undefined,
      producerAccounts: [],
      apiRateLimit: 50,
      apiBurstLimit: 100,
      apiKeyRateLimit: 10,
      apiKeyBurstLimit: 40,
      maxExportsPerWorkspace: 100,
      workflowLogLevel: 'ALL',
      developmentStages: ['dev'],
      tracing: true,
      reservedConcurrency: {},
      maxReadRequestUnits: {},
      maxWriteRequestUnits: {},
      eventLogPointInTimeRecovery: true,
      retainLogGroups: false,
      terminationProtection: true,
      account: PLACEHOLDER_ACCOUNT,
      region: PLACEHOLDER_REGION,
      placeholderEnv: true,
      skipBundling: false,
      nag: false,
    });
  });

  it('reads strings from -c key=value and JSON values from cdk.json alike', () => {
    // Act
    const fromCli = parseSettings(
      {
        stage: 'prod-eu',
        logRetentionDays: '90',
        eventLogRetentionDays: '60',
        writerConcurrency: '40',
        exportLagAlarmMinutes: '30',
        corsOrigins: 'https://app.example.com, https://admin.example.com',
        alarmEmail: 'ops@example.com',
        domainName: 'exports.example.com',
        certificateArn: 'arn:aws:acm:eu-west-1:123456789012:certificate/0f0e-12ab',
        'sluice:skipBundling': 'true',
      },
      {},
    );
    const fromJson = parseSettings({ writerConcurrency: 12, corsOrigins: ['https://app.example.com'] }, {});

    // Assess
    expect(fromCli).toMatchObject({
      stage: 'prod-eu',
      logRetentionDays: 90,
      eventLogRetentionDays: 60,
      writerConcurrency: 40,
      exportLagAlarmMinutes: 30,
      corsOrigins: ['https://app.example.com', 'https://admin.example.com'],
      alarmEmail: 'ops@example.com',
      domainName: 'exports.example.com',
      skipBundling: true,
    });
    expect(fromJson).toMatchObject({ writerConcurrency: 12, corsOrigins: ['https://app.example.com'] });
  });

  it('reads the production settings: producers, limits, log level, tracing, concurrency, caps', () => {
    // Act
    const fromCli = parseSettings(
      {
        stage: 'prod',
        producerAccounts: '222222222222, 333333333333',
        apiRateLimit: '300',
        apiKeyRateLimit: '25',
        apiKeyBurstLimit: '100',
        reservedConcurrency: 'writer=20, ingest=5',
        maxReadRequestUnits: '4000',
        tracing: 'false',
        terminationProtection: 'false',
      },
      {},
    );
    const fromJson = parseSettings(
      { reservedConcurrency: { api: 10 }, producerAccounts: ['222222222222'], workflowLogLevel: 'OFF' },
      {},
    );

    // Assess
    expect(fromCli).toMatchObject({
      producerAccounts: ['222222222222', '333333333333'],
      apiRateLimit: 300,
      apiBurstLimit: 300,
      apiKeyRateLimit: 25,
      apiKeyBurstLimit: 100,
      workflowLogLevel: 'ERROR',
      reservedConcurrency: { writer: 20, ingest: 5 },
      maxReadRequestUnits: { control: 4000, events: 4000, subscribers: 4000 },
      maxWriteRequestUnits: {},
      tracing: false,
      terminationProtection: false,
    });
    expect(fromJson).toMatchObject({
      reservedConcurrency: { api: 10 },
      producerAccounts: ['222222222222'],
      workflowLogLevel: 'OFF',
    });
  });

  it('logs the workflows at ERROR in every stage but the development stages, whatever its name', () => {
    // Act
    const level = (raw: Record<string, unknown>) => parseSettings(raw, {}).workflowLogLevel;

    // Assess
    expect(level({})).toBe('ALL');
    expect(level({ stage: 'production' })).toBe('ERROR');
    expect(level({ stage: 'live-eu' })).toBe('ERROR');
    expect(level({ stage: 'qa', developmentStages: 'dev,qa' })).toBe('ALL');
    expect(level({ stage: 'dev', developmentStages: ['qa'] })).toBe('ERROR');
    expect(level({ stage: 'production', workflowLogLevel: 'ALL' })).toBe('ALL');
  });

  it('takes a capacity cap for every table, or one per table', () => {
    // Act
    const every = parseSettings({ maxReadRequestUnits: '4000' }, {});
    const perTable = parseSettings({ maxWriteRequestUnits: 'events=2000, control=300' }, {});
    const fromJson = parseSettings({ maxReadRequestUnits: { subscribers: 50 } }, {});

    // Assess
    expect(every.maxReadRequestUnits).toEqual({ control: 4000, events: 4000, subscribers: 4000 });
    expect(perTable.maxWriteRequestUnits).toEqual({ events: 2000, control: 300 });
    expect(fromJson.maxReadRequestUnits).toEqual({ subscribers: 50 });
  });

  it('takes account and region from context first, then from the CDK CLI variables', () => {
    // Act
    const fromContext = parseSettings(
      { account: '123456789012', region: 'eu-west-1' },
      { CDK_DEFAULT_ACCOUNT: '999999999999', CDK_DEFAULT_REGION: 'us-west-2' },
    );
    const fromCli = parseSettings(
      {},
      { CDK_DEFAULT_ACCOUNT: '999999999999', CDK_DEFAULT_REGION: 'us-west-2' },
    );

    // Assess
    expect(fromContext).toMatchObject({
      account: '123456789012',
      region: 'eu-west-1',
      placeholderEnv: false,
    });
    expect(fromCli).toMatchObject({ account: '999999999999', region: 'us-west-2', placeholderEnv: false });
  });

  it.each([
    [{ stage: 'Prod' }, 'stage:'],
    [{ stage: 'prod_1' }, 'stage:'],
    [{ stage: '-prod' }, 'stage:'],
    [{ stage: '' }, 'stage:'],
    [{ logRetentionDays: 4 }, 'logRetentionDays: logRetentionDays must be one of the CloudWatch Logs values'],
    [{ logRetentionDays: 'month' }, 'logRetentionDays: logRetentionDays must be a whole number'],
    [{ eventLogRetentionDays: 0 }, 'eventLogRetentionDays: eventLogRetentionDays must be 1-3653'],
    [{ archiveRetentionDays: 30 }, 'archiveRetentionDays: archiveRetentionDays must be 91-3653'],
    [{ writerConcurrency: 0 }, 'writerConcurrency: writerConcurrency must be 1-40'],
    [{ writerConcurrency: 41 }, 'writerConcurrency: writerConcurrency must be 1-40'],
    [{ writerConcurrency: 2.5 }, 'writerConcurrency: writerConcurrency must be a whole number'],
    [{ alarmEmail: 'ops' }, 'alarmEmail: alarmEmail must be an e-mail address'],
    [{ corsOrigins: 'https://app.example.com/path' }, 'corsOrigins.0: "https://app.example.com/path"'],
    [{ account: '1234' }, 'account: account must be a 12-digit AWS account id'],
    [{ region: 'mars' }, 'region: region must be an AWS region'],
    [{ producerAccounts: '12345' }, 'producerAccounts.0: "12345" is not a 12-digit AWS account id'],
    [{ apiRateLimit: 0 }, 'apiRateLimit: apiRateLimit must be 1-10000'],
    [{ apiRateLimit: 300, apiBurstLimit: 200 }, 'apiBurstLimit: apiBurstLimit must be at least apiRateLimit'],
    [{ apiKeyRateLimit: 0 }, 'apiKeyRateLimit: apiKeyRateLimit must be 1-1000 requests per second'],
    [{ apiKeyRateLimit: 1.5 }, 'apiKeyRateLimit: apiKeyRateLimit must be a whole number'],
    [{ apiKeyBurstLimit: 0 }, 'apiKeyBurstLimit: apiKeyBurstLimit must be 1-5000'],
    [
      { workflowLogLevel: 'DEBUG' },
      'workflowLogLevel: workflowLogLevel must be one of ALL, ERROR, FATAL, OFF',
    ],
    [{ reservedConcurrency: 'writers=5' }, 'reservedConcurrency: reservedConcurrency names functions'],
    [
      { reservedConcurrency: 'writer=many' },
      'reservedConcurrency.writer: reservedConcurrency values must be whole numbers',
    ],
    [
      { maxReadRequestUnits: 'events=0' },
      'maxReadRequestUnits.events: maxReadRequestUnits must be at least 1',
    ],
    [
      { maxWriteRequestUnits: 'events=100,audit=5' },
      'maxWriteRequestUnits: maxWriteRequestUnits is a number for every table, or names tables: control, events, subscribers',
    ],
    [{ eventLogPointInTimeRecovery: 'no' }, 'eventLogPointInTimeRecovery: must be true or false'],
    [{ retainLogGroups: 'yes' }, 'retainLogGroups: must be true or false'],
    [{ tracing: 'on' }, 'tracing: must be true or false'],
    [
      {
        domainName: 'https://exports.example.com',
        certificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/abc-1',
      },
      'domainName: domainName must be a lower-case DNS name',
    ],
    [{ 'sluice:nag': 'yes' }, 'sluice:nag: must be true or false'],
  ])('refuses %j with a message naming the setting', (raw, expected) => {
    // Act
    const problems = problemsOf(raw);

    // Assess
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(expected);
  });

  it('refuses a certificate without a domain, and a domain without a certificate', () => {
    // Act
    const certificateOnly = problemsOf({
      certificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/abc-1',
    });
    const domainOnly = problemsOf({ domainName: 'exports.example.com' });

    // Assess
    expect(certificateOnly).toEqual([
      'domainName: domainName and certificateArn go together: give both for a custom domain, or neither',
    ]);
    expect(domainOnly[0]).toMatch(/^certificateArn: domainName and certificateArn go together/);
  });

  it('lists every problem at once, in the error message', () => {
    // Act
    const act = () => parseSettings({ stage: 'BAD', writerConcurrency: 99 }, {});

    // Assess
    expect(act).toThrowError(SettingsError);
    expect(act).toThrowError(
      /Invalid Sluice settings \(CDK context\):\n {2}- stage: .*\n {2}- writerConcurrency: /,
    );
  });

  it('refuses an unknown camelCase context key (a typo) but ignores feature flags', () => {
    // Prepare
    const app = new App({
      context: { logRetention: '7', '@aws-cdk/core:newStyleStackSynthesis': true, 'aws:cdk:x': 1 },
    });

    // Act
    const act = () => readSettings(app.node, {});

    // Assess
    expect(act).toThrowError(/logRetention: unknown setting/);
  });

  it('fails the app build, before any stack exists, on a bad value', () => {
    // Prepare
    const app = new App({ context: { stage: 'Prod!', 'sluice:skipBundling': true } });

    // Act
    const act = () => buildSluiceApp(app, {});

    // Assess
    expect(act).toThrowError(/stage: stage must be 1-20 characters/);
    expect(app.node.children).toHaveLength(0);
  });
});
