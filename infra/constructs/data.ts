// The tables, one per spec in lib/resources.ts (the local runtime creates the same ones), and the
// images bucket: snapshots' and backups' data, which any host reads to boot them.
import { CfnOutput, Duration, type RemovalPolicy, type Stack } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as s3 from "aws-cdk-lib/aws-s3";
import { NagSuppressions } from "cdk-nag";
import { MIGRATIONS_PREFIX } from "../../lib/compute/image-store.js";
import { type Projection, TABLES, type TableSpec } from "../../lib/resources.js";

/** A spec's projection as the CDK takes it (a list of attributes is INCLUDE). */
function cdkProjection(
  p: Projection,
): Pick<dynamodb.GlobalSecondaryIndexProps, "projectionType" | "nonKeyAttributes"> {
  if (p === "ALL") return { projectionType: dynamodb.ProjectionType.ALL };
  if (p === "KEYS_ONLY") return { projectionType: dynamodb.ProjectionType.KEYS_ONLY };
  return { projectionType: dynamodb.ProjectionType.INCLUDE, nonKeyAttributes: p };
}

export interface DataProps {
  /** What CloudFormation does with the tables when they leave the stack. */
  removalPolicy: RemovalPolicy;
}

/** Days a move's disk may stay in the images bucket (docs/moves.md). */
export const MIGRATION_DISK_DAYS = 7;

/**
 * Like every part in this folder, a plain class whose resources are the stack's own children: a
 * construct in between would change their logical IDs, and CloudFormation would replace the tables.
 */
export class Data {
  readonly tables: Record<TableSpec["id"], dynamodb.Table>;
  /**
   * images/<image id>: a snapshot's data; migrations/<migration uuid>: a resize's or cold
   * migration's disk on its way (lib/compute/image-store.ts)
   */
  readonly imagesBucket: s3.Bucket;

  constructor(stack: Stack, props: DataProps) {
    const tables = {} as Record<TableSpec["id"], dynamodb.Table>;
    for (const spec of TABLES) {
      const table = new dynamodb.Table(stack, spec.id, {
        partitionKey: { name: spec.partitionKey, type: dynamodb.AttributeType.STRING },
        sortKey: spec.sortKey ? { name: spec.sortKey, type: dynamodb.AttributeType.STRING } : undefined,
        billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
        pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
        timeToLiveAttribute: spec.ttlAttribute,
        removalPolicy: props.removalPolicy,
      });
      for (const gsi of spec.gsis) {
        table.addGlobalSecondaryIndex({
          indexName: gsi.indexName,
          partitionKey: { name: gsi.partitionKey, type: dynamodb.AttributeType.STRING },
          sortKey: gsi.sortKey ? { name: gsi.sortKey, type: dynamodb.AttributeType.STRING } : undefined,
          ...cdkProjection(gsi.projection),
        });
      }
      tables[spec.id] = table;
      new CfnOutput(stack, `${spec.id}TableName`, {
        value: table.tableName,
        description: `${spec.env} of the handlers`,
      });
    }
    this.tables = tables;
    this.imagesBucket = new s3.Bucket(stack, "Images", {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      removalPolicy: props.removalPolicy,
      lifecycleRules: [
        {
          // a move's disk is read only until its destination finished it, and removed at confirm
          // or revert; what a failed move or a lost removal left expires, and so do the parts of
          // an upload a host died in
          id: "MigrationDisks",
          prefix: MIGRATIONS_PREFIX,
          expiration: Duration.days(MIGRATION_DISK_DAYS),
          abortIncompleteMultipartUploadAfter: Duration.days(1),
        },
      ],
    });
    NagSuppressions.addResourceSuppressions(this.imagesBucket, [
      {
        id: "AwsSolutions-S1",
        reason:
          "Server access logs need a bucket of their own (itself unlogged); the images bucket is reached only by the stack's roles, whose object calls CloudTrail data events record where an operator turns them on",
      },
    ]);
    new CfnOutput(stack, "ImagesBucket", {
      value: this.imagesBucket.bucketName,
      description: "NOVALESS_IMAGES_BUCKET of the handlers; [novaless] images_bucket of the hosts",
    });
  }
}
