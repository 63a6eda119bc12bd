import { CONTROL_TABLE, EVENTS_TABLE, SUBSCRIBERS_TABLE, type TableSpec } from '@sluice/core';
import { Match } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { actionsOf, type Statement, type Synthesized, synthesize } from './helpers.js';

let built: Synthesized;
beforeAll(() => {
  built = synthesize();
});

interface TableResource {
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
  Properties: {
    KeySchema: { AttributeName: string; KeyType: string }[];
    AttributeDefinitions: { AttributeName: string; AttributeType: string }[];
    GlobalSecondaryIndexes?: { IndexName: string; KeySchema: { AttributeName: string; KeyType: string }[] }[];
    TimeToLiveSpecification?: { AttributeName: string; Enabled: boolean };
    BillingMode: string;
    PointInTimeRecoverySpecification?: { PointInTimeRecoveryEnabled: boolean };
    SSESpecification?: { SSEEnabled: boolean; SSEType?: string };
    DeletionProtectionEnabled?: boolean;
  };
}

const TABLES: [string, TableSpec][] = [
  ['ControlTable', CONTROL_TABLE],
  ['EventsTable', EVENTS_TABLE],
  ['SubscribersTable', SUBSCRIBERS_TABLE],
];

describe('stateful stack: tables', () => {
  it.each(TABLES)('%s has the keys, indexes and TTL of its @sluice/core spec', (logicalId, spec) => {
    // Act
    const table = built.statefulTemplate.toJSON().Resources[logicalId] as TableResource;

    // Assess
    expect(table.Properties.KeySchema).toEqual([
      { AttributeName: spec.partitionKey, KeyType: 'HASH' },
      { AttributeName: spec.sortKey, KeyType: 'RANGE' },
    ]);
    expect(table.Properties.GlobalSecondaryIndexes ?? []).toEqual(
      spec.globalIndexes.map((index) => ({
        IndexName: index.indexName,
        KeySchema: [
          { AttributeName: index.partitionKey, KeyType: 'HASH' },
          { AttributeName: index.sortKey, KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'ALL' },
      })),
    );
    expect(table.Properties.TimeToLiveSpecification).toEqual(
      spec.ttlAttribute ? { AttributeName: spec.ttlAttribute, Enabled: true } : undefined,
    );
  });

  it.each(TABLES)('%s is on demand, with PITR, SSE, deletion protection and RETAIN', (logicalId) => {
    // Act
    const table = built.statefulTemplate.toJSON().Resources[logicalId] as TableResource;

    // Assess
    expect(table.Properties.BillingMode).toBe('PAY_PER_REQUEST');
    expect(table.Properties.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
    // SSEEnabled without a KMSMasterKeyId is the AWS-managed key aws/dynamodb (see SpecTable for why).
    expect(table.Properties.SSESpecification).toEqual({ SSEEnabled: true });
    expect(table.Properties.DeletionProtectionEnabled).toBe(true);
    expect(table.DeletionPolicy).toBe('Retain');
    expect(table.UpdateReplacePolicy).toBe('Retain');
  });

  it('keeps fixed logical ids for everything that holds data', () => {
    // Act
    const resources = built.statefulTemplate.toJSON().Resources as Record<string, { Type: string }>;

    // Assess
    expect(resources.ControlTable?.Type).toBe('AWS::DynamoDB::Table');
    expect(resources.EventsTable?.Type).toBe('AWS::DynamoDB::Table');
    expect(resources.SubscribersTable?.Type).toBe('AWS::DynamoDB::Table');
    expect(resources.SecretsKey?.Type).toBe('AWS::KMS::Key');
    expect(resources.EventBus?.Type).toBe('AWS::Events::EventBus');
  });
});

describe('stateful stack: the secrets key', () => {
  const keyPolicy = () =>
    (
      built.statefulTemplate.toJSON().Resources.SecretsKey as {
        Properties: { KeyPolicy: { Statement: Statement[] } };
      }
    ).Properties.KeyPolicy.Statement;

  it('rotates yearly and is retained', () => {
    // Assess
    built.statefulTemplate.hasResource('AWS::KMS::Key', {
      Properties: Match.objectLike({ EnableKeyRotation: true, RotationPeriodInDays: 365 }),
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
    });
  });

  it('allows GenerateDataKey and Decrypt only with exactly the workspaceId and destinationId context', () => {
    // Act
    const crypto = keyPolicy().filter((s) =>
      actionsOf(s).some((a) => /^kms:(Decrypt|Encrypt|GenerateDataKey|ReEncrypt)/.test(a)),
    );

    // Assess
    expect(crypto).toHaveLength(1);
    expect(actionsOf(crypto[0]!).sort()).toEqual(['kms:Decrypt', 'kms:GenerateDataKey']);
    expect(crypto[0]).toMatchObject({
      Effect: 'Allow',
      Condition: {
        'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': ['workspaceId', 'destinationId'] },
        Null: {
          'kms:EncryptionContextKeys': 'false',
          'kms:EncryptionContext:workspaceId': 'false',
          'kms:EncryptionContext:destinationId': 'false',
        },
      },
    });
  });

  it('gives no one kms:*, and no way around the context (no CreateGrant)', () => {
    // Act
    const actions = keyPolicy().flatMap(actionsOf);

    // Assess
    expect(actions.filter((a) => a.includes('*'))).toEqual([]);
    expect(actions).not.toContain('kms:CreateGrant');
    expect(actions).toContain('kms:PutKeyPolicy');
    expect(actions).toContain('kms:ScheduleKeyDeletion');
  });
});

describe('stateful stack: outputs', () => {
  it('outputs the table names, the key ARN and the bus name', () => {
    // Act
    const outputs = Object.keys(built.statefulTemplate.toJSON().Outputs ?? {});

    // Assess
    expect(outputs).toEqual(
      expect.arrayContaining([
        'ControlTableName',
        'EventsTableName',
        'SubscribersTableName',
        'SecretsKeyArn',
        'EventBusName',
      ]),
    );
  });
});

describe('stateful stack: the event archive bucket', () => {
  const bucket = () =>
    built.statefulTemplate.toJSON().Resources.ArchiveBucket as {
      DeletionPolicy?: string;
      UpdateReplacePolicy?: string;
      Properties: Record<string, unknown> & {
        LifecycleConfiguration: { Rules: Record<string, unknown>[] };
      };
    };

  it('is encrypted, versioned, private, TLS only and retained', () => {
    // Act
    const { DeletionPolicy, UpdateReplacePolicy, Properties } = bucket();

    // Assess
    expect(DeletionPolicy).toBe('Retain');
    expect(UpdateReplacePolicy).toBe('Retain');
    expect(Properties.BucketEncryption).toEqual({
      ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
    });
    expect(Properties.VersioningConfiguration).toEqual({ Status: 'Enabled' });
    expect(Properties.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    built.statefulTemplate.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: Match.objectLike({
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      }),
    });
  });

  it('moves objects to cheaper classes, expires them after the archive retention (two years by default)', () => {
    // Act
    const [retention] = bucket().Properties.LifecycleConfiguration.Rules;

    // Assess
    expect(retention).toMatchObject({
      Status: 'Enabled',
      ExpirationInDays: 731,
      Transitions: [
        { StorageClass: 'STANDARD_IA', TransitionInDays: 30 },
        { StorageClass: 'GLACIER_IR', TransitionInDays: 90 },
      ],
      NoncurrentVersionExpiration: { NoncurrentDays: 7 },
      AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
    });
    expect(built.statefulTemplate.toJSON().Outputs?.ArchiveBucketName).toBeDefined();
  });

  it('takes the archive retention from the settings', () => {
    // Act
    const configured = synthesize({ archiveRetentionDays: '400' });
    const resource = configured.statefulTemplate.toJSON().Resources.ArchiveBucket as ReturnType<
      typeof bucket
    >;

    // Assess
    expect(resource.Properties.LifecycleConfiguration.Rules[0]).toMatchObject({ ExpirationInDays: 400 });
  });

  it('publishes read and write access to its archive/ objects as managed policies, no wildcard action', () => {
    // Act
    const policies = built.statefulTemplate.findResources('AWS::IAM::ManagedPolicy') as Record<
      string,
      { Properties: { PolicyDocument: { Statement: Statement[] } } }
    >;
    const grants = Object.fromEntries(
      Object.entries(policies).map(([id, policy]) => [
        id.replace(/[0-9A-F]{8}$/, ''),
        policy.Properties.PolicyDocument.Statement.map((statement) => [
          JSON.stringify(statement.Resource),
          actionsOf(statement).sort(),
        ]),
      ]),
    );

    // Assess
    const bucketArn = JSON.stringify({ 'Fn::GetAtt': ['ArchiveBucket', 'Arn'] });
    const objects = JSON.stringify({
      'Fn::Join': ['', [{ 'Fn::GetAtt': ['ArchiveBucket', 'Arn'] }, '/archive/*']],
    });
    expect(grants).toEqual({
      ArchiveReadAccess: [
        [bucketArn, ['s3:ListBucket']],
        [objects, ['s3:GetObject']],
      ],
      ArchiveWriteAccess: [
        [bucketArn, ['s3:ListBucket']],
        [objects, ['s3:AbortMultipartUpload', 's3:GetObject', 's3:PutObject']],
      ],
    });
  });
});
