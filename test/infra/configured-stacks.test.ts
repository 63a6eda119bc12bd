import type { Template } from 'aws-cdk-lib/assertions';
import { Match } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { definitionsFromTemplates } from '@sluice/devstack';
import { build, type Synthesized, synthesize } from './helpers.js';

/** Every optional setting given, each with a value other than its default. */
const CONTEXT = {
  stage: 'prod-eu',
  account: '123456789012',
  region: 'eu-west-1',
  logRetentionDays: '90',
  eventLogRetentionDays: '60',
  writerConcurrency: '25',
  exportLagAlarmMinutes: '15',
  alarmEmail: 'ops@example.com',
  corsOrigins: 'https://app.example.com,https://admin.example.com',
  domainName: 'exports.example.com',
  certificateArn: 'arn:aws:acm:eu-west-1:123456789012:certificate/11111111-2222-3333-4444-555555555555',
};

let built: Synthesized;
let t: Template;
beforeAll(() => {
  built = synthesize(CONTEXT);
  t = built.statelessTemplate;
});

describe('settings reach the stacks', () => {
  it('names the stacks after the stage and deploys them to the given account and region', () => {
    // Assess
    expect(built.stateful.stackName).toBe('Sluice-prod-eu-Stateful');
    expect(built.stateless.stackName).toBe('Sluice-prod-eu-Stateless');
    expect(built.stateless.account).toBe('123456789012');
    expect(built.stateless.region).toBe('eu-west-1');
    expect(built.stateful.terminationProtection).toBe(true);
  });

  it('runs at most writerConcurrency writers at once (the Map MaxConcurrency)', () => {
    // Act
    const { exportRun } = definitionsFromTemplates([t.toJSON()]);
    const map = exportRun.States.WriteWindows as { Type: string; MaxConcurrency?: number };

    // Assess
    expect(map.Type).toBe('Map');
    expect(map.MaxConcurrency).toBe(25);
  });

  it('sets every log group to logRetentionDays', () => {
    // Act
    const groups = Object.values(t.findResources('AWS::Logs::LogGroup')) as {
      Properties: { RetentionInDays?: number };
    }[];

    // Assess
    expect(new Set(groups.map((g) => g.Properties.RetentionInDays))).toEqual(new Set([90]));
  });

  it('hands eventLogRetentionDays to the ingest function', () => {
    // Assess
    t.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({ SLUICE_EVENT_RETENTION_DAYS: '60', SLUICE_STAGE: 'prod-eu' }),
      },
    });
  });

  it('turns CORS on for exactly the given origins', () => {
    // Assess
    t.hasResourceProperties('AWS::ApiGatewayV2::Api', {
      CorsConfiguration: {
        AllowOrigins: ['https://app.example.com', 'https://admin.example.com'],
        AllowHeaders: ['authorization', 'content-type'],
        AllowMethods: Match.arrayWith(['GET', 'POST', 'PATCH', 'DELETE']),
      },
    });
  });

  it('routes the four API methods instead of ANY, so API Gateway answers preflights without the authorizer', () => {
    // Act
    const routes = (
      Object.values(t.findResources('AWS::ApiGatewayV2::Route')) as {
        Properties: { RouteKey: string; AuthorizationType: string };
      }[]
    ).filter((route) => route.Properties.RouteKey.includes('{proxy+}')); // the public ones: openapi-route.test.ts

    // Assess
    expect(routes.map((r) => r.Properties.RouteKey).sort()).toEqual(
      ['DELETE', 'GET', 'PATCH', 'POST']
        .flatMap((m) => [`${m} /api/v1/{proxy+}`, `${m} /v1/{proxy+}`])
        .sort(),
    );
    expect(routes.every((r) => r.Properties.AuthorizationType === 'CUSTOM')).toBe(true);
  });

  it('holds the custom domain, with its certificate and TLS 1.2, in the stateful stack; maps the API onto it', () => {
    // Assess
    built.statefulTemplate.hasResourceProperties('AWS::ApiGatewayV2::DomainName', {
      DomainName: 'exports.example.com',
      DomainNameConfigurations: [
        Match.objectLike({ CertificateArn: CONTEXT.certificateArn, SecurityPolicy: 'TLS_1_2' }),
      ],
    });
    t.resourceCountIs('AWS::ApiGatewayV2::DomainName', 0);
    t.resourceCountIs('AWS::ApiGatewayV2::ApiMapping', 1);
    expect(t.toJSON().Outputs.ApiUrl.Value).toBe('https://exports.example.com/v1');
    expect(built.statefulTemplate.toJSON().Outputs.ApiDomainTarget).toBeDefined();
  });

  it('subscribes the alarm e-mail and uses the lag threshold', () => {
    // Assess
    t.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'ops@example.com' });
    t.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmDescription: Match.stringLikeRegexp('more than 15 minutes behind'),
      Threshold: 900,
    });
  });

  it('turns termination protection off only when the setting says so', () => {
    // Act
    const scratch = build({ stage: 'scratch', terminationProtection: 'false' });

    // Assess
    expect(scratch.stateful.terminationProtection).toBe(false);
  });
});
