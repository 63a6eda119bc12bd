import { RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { build, CFN_VALIDATION_FLAG } from './helpers.js';

/** The findings cdk-nag's AwsSolutionsChecks reports, one line each: `<rule> <construct path>`. */
function findings(scope: Parameters<AwsSolutionsChecks['validateScope']>[0]): string[] {
  const report = new AwsSolutionsChecks(scope).validateScope(scope);
  return report.violations.flatMap((violation) =>
    violation.violatingResources.map(
      (resource) => `${violation.severity} ${violation.ruleName} ${resource.constructPath ?? ''}`,
    ),
  );
}

describe('cdk-nag AwsSolutionsChecks', () => {
  it('reports no unacknowledged error or warning on either stack, with every setting on', () => {
    // Prepare
    const { app } = build({
      alarmEmail: 'ops@example.com',
      corsOrigins: 'https://app.example.com',
      domainName: 'exports.example.com',
      certificateArn: 'arn:aws:acm:us-east-1:111111111111:certificate/11111111-2222-3333-4444-555555555555',
    });

    // Act
    const found = findings(app);

    // Assess
    expect(found).toEqual([]);
  });

  it('reports no finding with the defaults either', () => {
    // Act
    const found = findings(build().app);

    // Assess
    expect(found).toEqual([]);
  });

  it('would report a table without point-in-time recovery (the check is live), unless acknowledged', () => {
    // Prepare
    const { app } = build();
    const stack = new Stack(app, 'Probe');
    const table = new dynamodb.Table(stack, 'Unprotected', {
      partitionKey: { name: 'PK', type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    // Act
    const before = findings(app);
    Validations.of(table).acknowledge({ id: 'AwsSolutions-DDB3', reason: 'probe' });
    const after = findings(app);

    // Assess
    expect(before).toEqual([
      expect.stringMatching(/^warning AwsSolutions-DDB3 Probe\/Unprotected\/Resource$/),
    ]);
    expect(after).toEqual([]);
  });

  it('records every acknowledgement with a reason', () => {
    // Prepare
    const { app } = build();

    // Act
    const acknowledged = app.node
      .findAll()
      .flatMap((c) => c.node.metadata.filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY))
      .flatMap((m) => Object.entries(m.data as Record<string, string>));

    // Assess
    expect(acknowledged.length).toBeGreaterThan(0);
    for (const [id, reason] of acknowledged) {
      expect(id).toMatch(/AwsSolutions-/);
      expect(reason.length).toBeGreaterThan(30);
    }
  });

  it('leaves no CDK error or warning annotation on either stack', () => {
    // Prepare
    const { stateful, stateless } = build({ [CFN_VALIDATION_FLAG]: false });

    // Act
    const annotations = [stateful, stateless].map((stack) => Annotations.fromStack(stack));

    // Assess
    for (const found of annotations) {
      expect(found.findError('*', Match.anyValue())).toEqual([]);
      expect(found.findWarning('*', Match.anyValue())).toEqual([]);
    }
  });
});
