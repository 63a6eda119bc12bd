import { CONTROL_TABLE, EVENTS_TABLE, SUBSCRIBERS_TABLE } from '@sluice/core';
import { WORKSPACE_SOURCE_PREFIX } from '@sluice/eventlog';
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import * as acm from 'aws-cdk-lib/aws-certificatemanager';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as s3 from 'aws-cdk-lib/aws-s3';
import type { Construct } from 'constructs';
import { SpecTable } from './constructs/spec-table.js';

/**
 * The encryption-context keys every use of the secrets key must carry, exactly: a ciphertext is bound to
 * its workspace and destination, so one copied onto another destination does not decrypt.
 */
export const SECRET_CONTEXT_KEYS = ['workspaceId', 'destinationId'] as const;

/**
 * The IAM condition that limits `kms:GenerateDataKey` and `kms:Decrypt` to requests whose encryption
 * context has both {@link SECRET_CONTEXT_KEYS} and no other key. Used in the key policy and again on every
 * grant, so neither alone has to be right.
 */
export const SECRET_CONTEXT_CONDITIONS = {
  'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': [...SECRET_CONTEXT_KEYS] },
  Null: {
    'kms:EncryptionContextKeys': 'false',
    ...Object.fromEntries(SECRET_CONTEXT_KEYS.map((key) => [`kms:EncryptionContext:${key}`, 'false'])),
  },
};

/**
 * Key management actions the account keeps. No cryptographic use (granted only with the context) and no
 * `kms:CreateGrant`: a grant could hand out `Decrypt` without the context condition.
 */
const KEY_ADMIN_ACTIONS = [
  'kms:CancelKeyDeletion',
  'kms:CreateAlias',
  'kms:DeleteAlias',
  'kms:DescribeKey',
  'kms:DisableKey',
  'kms:DisableKeyRotation',
  'kms:EnableKey',
  'kms:EnableKeyRotation',
  'kms:GetKeyPolicy',
  'kms:GetKeyRotationStatus',
  'kms:ListAliases',
  'kms:ListGrants',
  'kms:ListKeyPolicies',
  'kms:ListResourceTags',
  'kms:PutKeyPolicy',
  'kms:RevokeGrant',
  'kms:RotateKeyOnDemand',
  'kms:ScheduleKeyDeletion',
  'kms:TagResource',
  'kms:UntagResource',
  'kms:UpdateAlias',
  'kms:UpdateKeyDescription',
];

/** Properties of {@link StatefulStack}. */
export interface StatefulStackProps extends StackProps {
  /** The deployment stage, used in descriptions and outputs. */
  readonly stage: string;
  /** Other accounts whose principals may put events on the bus (under workspace sources only). @default [] */
  readonly producerAccounts?: readonly string[];
  /** On-demand read cap of each table and index. @default - no cap */
  readonly maxReadRequestUnits?: number;
  /** On-demand write cap of each table and index. @default - no cap */
  readonly maxWriteRequestUnits?: number;
  /** The API's custom domain (with {@link certificateArn}). @default - none: the execute-api URL only */
  readonly domainName?: string;
  /** An ACM certificate in the stack's region covering {@link domainName}. */
  readonly certificateArn?: string;
  /** Days an object stays in the event archive. @default 731 (two years) */
  readonly archiveRetentionDays?: number;
}

/** Days after which archive objects move to Standard-IA, then to Glacier Instant Retrieval. */
export const ARCHIVE_TRANSITIONS = { infrequentAccessDays: 30, glacierInstantRetrievalDays: 90 } as const;
/** Days a replaced or deleted archive object's old version is kept (versioning guards against mistakes). */
export const ARCHIVE_NONCURRENT_DAYS = 7;

/**
 * Everything that holds data, or that others point at, and must survive a redeploy or a deleted stateless
 * stack: the control, event log and subscriber tables, the key that seals customers' secrets, the
 * ingestion bus producers put events on, and the API's custom domain customers call. Every resource has a
 * fixed logical id and is retained on stack deletion. Termination protection comes from the stack props
 * (the `terminationProtection` setting).
 */
export class StatefulStack extends Stack {
  /** Workspaces, API keys, destinations, cursors, leases and runs (`SLUICE_CONTROL_TABLE`). */
  public readonly controlTable: dynamodb.Table;
  /** The event log, one item per event (`SLUICE_EVENTS_TABLE`). */
  public readonly eventsTable: dynamodb.Table;
  /** The current state of every subscriber (`SLUICE_SUBSCRIBERS_TABLE`). */
  public readonly subscribersTable: dynamodb.Table;
  /** Envelope-encrypts destination secrets (`SLUICE_KMS_KEY_ID`); usable only with the secret context. */
  public readonly secretsKey: kms.Key;
  /** Platform producers put events here; the stateless stack routes them to the ingest function. */
  public readonly eventBus: events.EventBus;
  /** The accounts besides this one that the bus policy lets put events. */
  public readonly producerAccounts: readonly string[];
  /**
   * The API's custom domain, when configured. The stateless stack maps its API onto it (an `ApiMapping`),
   * so recreating that stack keeps the URL and the DNS target customers and their DNS point at.
   */
  public readonly apiDomain?: apigwv2.DomainName;
  /** Sluice's own event archive: hot log rows, one object per workspace, dataset and hour (`SLUICE_ARCHIVE_BUCKET`). */
  public readonly archiveBucket: s3.Bucket;
  /**
   * What the readers of the archive may do (list the bucket, get `archive/*`), and what its compaction may
   * do (also put and abort uploads). Managed policies of this stack, attached to the stateless stack's roles:
   * the object-level grant names this stack's bucket, so its acknowledgement names it the same way whether
   * cdk-nag runs in process or at `cdk synth` (where a cross-stack reference becomes `Fn::GetStackOutput`).
   */
  public readonly archiveReadAccess: iam.ManagedPolicy;
  public readonly archiveWriteAccess: iam.ManagedPolicy;

  constructor(scope: Construct, id: string, props: StatefulStackProps) {
    super(scope, id, {
      description: `Sluice (${props.stage}): tables, secrets key, event bus and API domain. Retained on delete.`,
      ...props,
      terminationProtection: props.terminationProtection ?? true,
    });
    const caps = {
      maxReadRequestUnits: props.maxReadRequestUnits,
      maxWriteRequestUnits: props.maxWriteRequestUnits,
    };

    this.controlTable = new SpecTable(this, 'ControlTable', {
      spec: CONTROL_TABLE,
      logicalId: 'ControlTable',
      ...caps,
    });
    this.eventsTable = new SpecTable(this, 'EventsTable', {
      spec: EVENTS_TABLE,
      logicalId: 'EventsTable',
      ...caps,
    });
    this.subscribersTable = new SpecTable(this, 'SubscribersTable', {
      spec: SUBSCRIBERS_TABLE,
      logicalId: 'SubscribersTable',
      ...caps,
    });

    this.archiveBucket = this.createArchiveBucket(props.archiveRetentionDays ?? 731);
    this.archiveReadAccess = this.archiveAccess('ArchiveReadAccess', ['s3:GetObject']);
    this.archiveWriteAccess = this.archiveAccess('ArchiveWriteAccess', [
      's3:GetObject',
      's3:PutObject',
      's3:AbortMultipartUpload',
    ]);

    const root = new iam.AccountRootPrincipal();
    this.secretsKey = new kms.Key(this, 'SecretsKey', {
      description: `Sluice (${props.stage}): seals destination secrets, bound to {workspaceId, destinationId}`,
      enableKeyRotation: true,
      rotationPeriod: Duration.days(365),
      removalPolicy: RemovalPolicy.RETAIN,
      pendingWindow: Duration.days(30),
      // The policy replaces the default "account root: kms:*", which would let any IAM policy in the
      // account use the key without an encryption context.
      policy: new iam.PolicyDocument({
        statements: [
          new iam.PolicyStatement({
            sid: 'AccountAdministersKey',
            principals: [root],
            actions: KEY_ADMIN_ACTIONS,
            resources: ['*'],
          }),
          new iam.PolicyStatement({
            sid: 'UseOnlyWithDestinationContext',
            principals: [root],
            actions: ['kms:GenerateDataKey', 'kms:Decrypt'],
            resources: ['*'],
            conditions: SECRET_CONTEXT_CONDITIONS,
          }),
        ],
      }),
    });
    (this.secretsKey.node.defaultChild as kms.CfnKey).overrideLogicalId('SecretsKey');

    this.eventBus = new events.EventBus(this, 'EventBus', {
      description: `Sluice (${props.stage}): platform events to export`,
    });
    (this.eventBus.node.defaultChild as events.CfnEventBus).overrideLogicalId('EventBus');
    // Producers hold its ARN: replacing or deleting it with the stack would cut them off.
    this.eventBus.applyRemovalPolicy(RemovalPolicy.RETAIN);
    this.producerAccounts = props.producerAccounts ?? [];
    if (this.producerAccounts.length > 0) {
      // Same-account producers need only their IAM policy; another account needs the bus to allow it too.
      // Only under workspace sources, so each account's own IAM decides which workspaces its principals
      // write for (`events:source`), and the ingest function checks the detail names the same workspace.
      this.eventBus.addToResourcePolicy(
        new iam.PolicyStatement({
          sid: 'ProducerAccountsPutWorkspaceEvents',
          principals: this.producerAccounts.map((id) => new iam.AccountPrincipal(id)),
          actions: ['events:PutEvents'],
          resources: [this.eventBus.eventBusArn],
          conditions: { StringLike: { 'events:source': `${WORKSPACE_SOURCE_PREFIX}*` } },
        }),
      );
    }

    if (props.domainName !== undefined && props.certificateArn !== undefined) {
      this.apiDomain = new apigwv2.DomainName(this, 'ApiDomain', {
        domainName: props.domainName,
        certificate: acm.Certificate.fromCertificateArn(this, 'ApiCertificate', props.certificateArn),
        securityPolicy: apigwv2.SecurityPolicy.TLS_1_2,
      });
      const domain = this.apiDomain.node.defaultChild as apigwv2.CfnDomainName;
      domain.overrideLogicalId('ApiDomain');
      // Customers' DNS points at its regional target: a new domain resource would be a new target.
      domain.applyRemovalPolicy(RemovalPolicy.RETAIN);
      new CfnOutput(this, 'ApiDomainTarget', {
        value: this.apiDomain.regionalDomainName,
        description: `Point a CNAME (or alias) for ${props.domainName} here`,
      });
    }

    new CfnOutput(this, 'ControlTableName', { value: this.controlTable.tableName });
    new CfnOutput(this, 'EventsTableName', { value: this.eventsTable.tableName });
    new CfnOutput(this, 'SubscribersTableName', { value: this.subscribersTable.tableName });
    new CfnOutput(this, 'ArchiveBucketName', { value: this.archiveBucket.bucketName });
    new CfnOutput(this, 'SecretsKeyArn', { value: this.secretsKey.keyArn });
    new CfnOutput(this, 'EventBusName', { value: this.eventBus.eventBusName });
    new CfnOutput(this, 'EventBusArn', {
      value: this.eventBus.eventBusArn,
      description: `Producers put events here, source "${WORKSPACE_SOURCE_PREFIX}<workspaceId>"`,
    });
  }

  /**
   * The event archive bucket: encrypted (SSE-S3), TLS only, public access blocked, versioned, retained on
   * delete; objects move to Standard-IA after 30 days and Glacier Instant Retrieval after 90 (both still
   * readable at once by a late export or a backfill; S3 leaves objects under 128 KB in Standard, where the
   * cheaper classes' minimum size would cost more), expire after the archive retention, and old versions
   * (an erasure's rewritten objects) go after 7 days.
   */
  /** A managed policy over the archive: list the bucket, `objectActions` on `archive/*`. Never a wildcard action. */
  private archiveAccess(id: string, objectActions: string[]): iam.ManagedPolicy {
    const policy = new iam.ManagedPolicy(this, id, {
      description: `Sluice: ${objectActions.join(', ')} on the event archive's archive/ objects`,
      statements: [
        new iam.PolicyStatement({ actions: ['s3:ListBucket'], resources: [this.archiveBucket.bucketArn] }),
        new iam.PolicyStatement({
          actions: objectActions,
          resources: [this.archiveBucket.arnForObjects('archive/*')],
        }),
      ],
    });
    Validations.of(policy).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::<ArchiveBucket.Arn>/archive/*]',
      reason:
        'Archive objects are named by workspace, dataset and hour (archive/<workspace>/<dataset>/date=…/hour=…), ' +
        "created as time passes: only the archive/ prefix of Sluice's own archive bucket can be named.",
    });
    return policy;
  }

  private createArchiveBucket(retentionDays: number): s3.Bucket {
    if (
      !(Number.isInteger(retentionDays) && retentionDays > ARCHIVE_TRANSITIONS.glacierInstantRetrievalDays)
    ) {
      throw new Error(
        `archiveRetentionDays must be a whole number above ${ARCHIVE_TRANSITIONS.glacierInstantRetrievalDays}`,
      );
    }
    const bucket = new s3.Bucket(this, 'ArchiveBucket', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      versioned: true,
      removalPolicy: RemovalPolicy.RETAIN,
      lifecycleRules: [
        {
          id: 'archive-retention',
          transitions: [
            {
              storageClass: s3.StorageClass.INFREQUENT_ACCESS,
              transitionAfter: Duration.days(ARCHIVE_TRANSITIONS.infrequentAccessDays),
            },
            {
              storageClass: s3.StorageClass.GLACIER_INSTANT_RETRIEVAL,
              transitionAfter: Duration.days(ARCHIVE_TRANSITIONS.glacierInstantRetrievalDays),
            },
          ],
          expiration: Duration.days(retentionDays),
          noncurrentVersionExpiration: Duration.days(ARCHIVE_NONCURRENT_DAYS),
          abortIncompleteMultipartUploadAfter: Duration.days(1),
        },
        { id: 'expired-delete-markers', expiredObjectDeleteMarker: true },
      ],
    });
    (bucket.node.defaultChild as s3.CfnBucket).overrideLogicalId('ArchiveBucket');
    Validations.of(bucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason:
        'Only Sluice functions read and write the archive, and CloudTrail records their calls; server access ' +
        'logs would need a second bucket and cost more than the archive for hourly objects.',
    });
    return bucket;
  }
}
