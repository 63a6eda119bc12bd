import type { TableSpec } from '@sluice/core';
import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';

/** Properties of {@link SpecTable}. */
export interface SpecTableProps {
  /** The key schema, GSIs and TTL attribute, from `@sluice/core` `tables.ts`. */
  readonly spec: TableSpec;
  /**
   * The CloudFormation logical id, fixed so that refactoring the construct tree never replaces a table
   * (a replaced table is an empty table).
   */
  readonly logicalId: string;
  /**
   * On-demand read request units a second the table may use at most (each index gets the same cap), so a
   * runaway client meets throttling instead of an unbounded bill. @default - no cap
   */
  readonly maxReadRequestUnits?: number;
  /** On-demand write request units a second, as {@link maxReadRequestUnits}. @default - no cap */
  readonly maxWriteRequestUnits?: number;
  /**
   * Point-in-time recovery (continuous backups for 35 days, billed per GB). Only the event log may turn it
   * off (the `eventLogPointInTimeRecovery` setting): its rows also live in the event archive. @default true
   */
  readonly pointInTimeRecovery?: boolean;
}

/**
 * A DynamoDB table built from a `@sluice/core` {@link TableSpec}, with the settings every Sluice table
 * shares: on-demand capacity, point-in-time recovery, server-side encryption with the AWS-managed key
 * (`aws/dynamodb`), deletion protection and `RemovalPolicy.RETAIN`.
 *
 * Why the AWS-managed key and not a customer-managed one: the only secret Sluice stores (a destination's
 * secret access key) is already envelope-encrypted with its own customer-managed key before it reaches a
 * table, bound to its workspace and destination. For the rest, the AWS-managed key gives encryption at rest
 * with every use logged in CloudTrail, without a second key policy to get wrong (a broken table key policy
 * makes the tables unreadable) and without a KMS request charge on every read. A platform that must
 * control the table key can switch to `TableEncryption.CUSTOMER_MANAGED` in place; DynamoDB re-encrypts
 * without downtime.
 */
export class SpecTable extends dynamodb.Table {
  constructor(scope: Construct, id: string, props: SpecTableProps) {
    const { spec } = props;
    super(scope, id, {
      partitionKey: { name: spec.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: spec.sortKey, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: props.pointInTimeRecovery ?? true },
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
      timeToLiveAttribute: spec.ttlAttribute,
      maxReadRequestUnits: props.maxReadRequestUnits,
      maxWriteRequestUnits: props.maxWriteRequestUnits,
    });
    for (const index of spec.globalIndexes) {
      this.addGlobalSecondaryIndex({
        indexName: index.indexName,
        partitionKey: { name: index.partitionKey, type: dynamodb.AttributeType.STRING },
        sortKey: { name: index.sortKey, type: dynamodb.AttributeType.STRING },
        projectionType: dynamodb.ProjectionType.ALL,
        maxReadRequestUnits: props.maxReadRequestUnits,
        maxWriteRequestUnits: props.maxWriteRequestUnits,
      });
    }
    (this.node.defaultChild as dynamodb.CfnTable).overrideLogicalId(props.logicalId);
  }
}
