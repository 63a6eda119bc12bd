import { CONTROL_TABLE, EVENTS_TABLE, SUBSCRIBERS_TABLE, type TableSpec } from '@sluice/core';
import { NOTICE_DETAIL_TYPES } from '@sluice/engine';
import { EVENTS_DETAIL_TYPE, SUBSCRIBERS_DETAIL_TYPE, WORKSPACE_SOURCE_PREFIX } from '@sluice/eventlog';
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import * as acm from 'aws-cdk-lib/aws-certificatemanager';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { SpecTable } from './constructs/spec-table.js';
import type { CapacityCaps, RestoredTables, TableName } from './settings.js';

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
  /** On-demand read cap per table (its indexes the same). @default - no cap */
  readonly maxReadRequestUnits?: CapacityCaps;
  /** On-demand write cap per table (its indexes the same). @default - no cap */
  readonly maxWriteRequestUnits?: CapacityCaps;
  /** Point-in-time recovery of the event log table (the others always have it). @default true */
  readonly eventLogPointInTimeRecovery?: boolean;
  /** The API's custom domain (with {@link certificateArn}). @default - none: the execute-api URL only */
  readonly domainName?: string;
  /** An ACM certificate in the stack's region covering {@link domainName}. */
  readonly certificateArn?: string;
  /** Days an object stays in the event archive. @default 731 (two years) */
  readonly archiveRetentionDays?: number;
  /**
   * Tables restored from a backup or a point in time, by name: used in place of the stack's own (which
   * leaves the template and is retained, not deleted). docs/runbook.md, "Restore". @default - none
   */
  readonly restoredTables?: RestoredTables;
}

/** How long the ingest dead-letter queue keeps a message (the SQS maximum). */
export const DEAD_LETTER_RETENTION = Duration.days(14);
/**
 * The largest message SQS holds (1 MiB): a failure record is the bus event (at most 256 KB) plus the request
 * and response context, so it always fits.
 */
export const DEAD_LETTER_MAX_BYTES = 1_048_576;
/** The `source` prefix of everything producers (and Sluice) put on the bus. */
export const SLUICE_SOURCE_PREFIX = 'sluice.';

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
  /** Workspaces, API keys, destinations, cursors, leases, runs and rejected events (`SLUICE_CONTROL_TABLE`). */
  public readonly controlTable: dynamodb.ITable;
  /** The event log, one item per event (`SLUICE_EVENTS_TABLE`). */
  public readonly eventsTable: dynamodb.ITable;
  /** The current state of every subscriber (`SLUICE_SUBSCRIBERS_TABLE`). */
  public readonly subscribersTable: dynamodb.ITable;
  /**
   * Bus events ingestion could not write (the ingest function's on-failure destination), events EventBridge
   * could not deliver (the ingest rule's dead-letter queue), and `sluice.` entries no ingest rule takes (the
   * catch-all rules). Operators point `sluice events redrive` at it, so it outlives the stateless stack.
   */
  public readonly ingestDeadLetters: sqs.Queue;
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
    const caps = (name: TableName) => ({
      maxReadRequestUnits: props.maxReadRequestUnits?.[name],
      maxWriteRequestUnits: props.maxWriteRequestUnits?.[name],
    });
    const eventLogPitr = props.eventLogPointInTimeRecovery ?? true;

    // A restored table is named, not created: the stack's own leaves the template and is retained (its
    // deletion protection and RETAIN policy keep it), so the damaged copy stays until an operator drops it.
    const table = (name: TableName, logicalId: string, spec: TableSpec): dynamodb.ITable => {
      const restored = props.restoredTables?.[name];
      if (restored !== undefined) return dynamodb.Table.fromTableName(this, `${logicalId}Restored`, restored);
      const pointInTimeRecovery = name === 'events' ? eventLogPitr : true;
      const created = new SpecTable(this, logicalId, { spec, logicalId, pointInTimeRecovery, ...caps(name) });
      if (!pointInTimeRecovery) {
        Validations.of(created).acknowledge({
          id: 'AwsSolutions-DDB3',
          reason:
            'Point-in-time recovery of the event log is off by the eventLogPointInTimeRecovery setting: its rows ' +
            'are also kept in the event archive bucket (versioned), which exports read once they leave the log.',
        });
      }
      return created;
    };
    this.controlTable = table('control', 'ControlTable', CONTROL_TABLE);
    this.eventsTable = table('events', 'EventsTable', EVENTS_TABLE);
    this.subscribersTable = table('subscribers', 'SubscribersTable', SUBSCRIBERS_TABLE);

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

    this.ingestDeadLetters = this.createIngestDeadLetters();

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
    new CfnOutput(this, 'IngestDeadLetterQueueUrl', {
      value: this.ingestDeadLetters.queueUrl,
      description: 'Bus events ingestion could not write or take: `sluice events redrive --queue-url <this>`',
    });
  }

  /**
   * The ingest dead-letter queue, and the catch-all rules that send it every `sluice.` entry the ingest rule
   * does not take (so nothing a producer sends disappears in EventBridge). The ingest rule takes
   * `source` prefix `sluice.workspace.`, `detail-type` sluice.events or sluice.subscribers, from this account
   * or a producer account; Sluice's own notices (`sluice.data-exports`) are for platform consumers. The rest
   * of the `sluice.` entries is the union of three patterns (EventBridge cannot say "not matched by
   * another rule", nor two conditions on one field): another detail-type; an ingest detail-type under a source
   * that is not a workspace source; an ingest entry from an account the ingest rule does not list.
   * `test/infra/ingest-rules.test.ts` matches sample entries against the synthesized patterns.
   */
  private createIngestDeadLetters(): sqs.Queue {
    const queue = new sqs.Queue(this, 'IngestDeadLetters', {
      retentionPeriod: DEAD_LETTER_RETENTION,
      maxMessageSizeBytes: DEAD_LETTER_MAX_BYTES,
      enforceSSL: true,
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    (queue.node.defaultChild as sqs.CfnQueue).overrideLogicalId('IngestDeadLetters');
    Validations.of(queue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        'This queue is itself the dead-letter queue of the ingest function and of the bus rules; ' +
        '`sluice events redrive` empties it into the event log.',
    });
    // The stateless stack's ingest rule names this queue as its dead-letter queue: any rule of the Sluice bus
    // may send to it (a rule ARN of the other stack here would make the stacks depend on each other).
    queue.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'SluiceBusRulesSendDeadLetters',
        principals: [new iam.ServicePrincipal('events.amazonaws.com')],
        actions: ['sqs:SendMessage'],
        resources: [queue.queueArn],
        conditions: {
          ArnLike: {
            'aws:SourceArn': this.formatArn({
              service: 'events',
              resource: 'rule',
              resourceName: `${this.eventBus.eventBusName}/*`,
            }),
          },
        },
      }),
    );
    const ingestDetailTypes = [EVENTS_DETAIL_TYPE, SUBSCRIBERS_DETAIL_TYPE];
    const noticeDetailTypes = Object.values(NOTICE_DETAIL_TYPES);
    // Disjoint from each other and from the ingest rule, so no entry reaches the queue twice.
    const catchAll: Record<string, { description: string; pattern: events.EventPattern }> = {
      OtherDetailTypeRule: {
        description:
          'sluice. entries of a detail-type ingestion does not take go to the ingest dead-letter queue',
        pattern: {
          source: events.Match.prefix(SLUICE_SOURCE_PREFIX),
          detailType: events.Match.anythingBut(...ingestDetailTypes, ...noticeDetailTypes),
        },
      },
      NoticeTypeFromWorkspaceRule: {
        description:
          "Sluice's notice detail-types under a workspace source go to the ingest dead-letter queue",
        pattern: { source: events.Match.prefix(WORKSPACE_SOURCE_PREFIX), detailType: noticeDetailTypes },
      },
      NonWorkspaceSourceRule: {
        description: `Ingest detail-types under a source other than ${WORKSPACE_SOURCE_PREFIX}<id> go to the ingest dead-letter queue`,
        pattern: {
          source: events.Match.anythingButPrefix(WORKSPACE_SOURCE_PREFIX),
          detailType: ingestDetailTypes,
        },
      },
      UnlistedAccountRule: {
        description:
          'Ingest entries from an account the ingest rule does not list go to the ingest dead-letter queue',
        pattern: {
          account: events.Match.anythingBut(this.account, ...this.producerAccounts),
          source: events.Match.prefix(WORKSPACE_SOURCE_PREFIX),
          detailType: ingestDetailTypes,
        },
      },
    };
    for (const [id, { description, pattern }] of Object.entries(catchAll)) {
      const rule = new events.Rule(this, id, {
        description,
        eventBus: this.eventBus,
        eventPattern: pattern,
        targets: [new targets.SqsQueue(queue)],
      });
      (rule.node.defaultChild as events.CfnRule).overrideLogicalId(id);
    }
    return queue;
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
