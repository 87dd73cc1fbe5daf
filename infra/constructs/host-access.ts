// What a compute host may do: no database, its own queue, compute-events, and the images bucket
// (images/, and migrations/ for the disks moves carry). Nova's
// nova-compute never touches the database. A host's credentials are a session of
// ComputeHostRole tagged `novaless-host=<host>` and named <host>: its own queue and DLQ carry
// the same tag (the consumer creates them), and it may report only to compute-events' function
// URL, only as a session named after its tag, so the signer's aws:userid names the host (the
// function checks reports against it). A session without the tag matches nothing.
import { Aws, CfnOutput, Duration, type Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as rolesanywhere from "aws-cdk-lib/aws-rolesanywhere";
import type * as s3 from "aws-cdk-lib/aws-s3";
import { NagSuppressions } from "cdk-nag";
import { IMAGES_PREFIX, MIGRATIONS_PREFIX } from "../../lib/compute/image-store.js";
import { HOST_TAG } from "../../lib/resources.js";
import { COMPUTE_QUEUES_REASON, computeQueuesFinding, IMAGES_REASON, imagesFinding } from "./nag.js";
import type { Queues } from "./queues.js";

/**
 * IAM Roles Anywhere for hypervisors outside AWS. The trust names its trust anchor: without
 * `aws:SourceArn`, a certificate from any trust anchor in the account (any CA someone registered
 * for another purpose) with the right issuer CN could become a host.
 */
export interface RolesAnywhereTrust {
  /** The CN of the CA certificate that signs the hosts' certificates (their CN is the host). */
  issuerCn: string;
  /** The operator's CA certificate (PEM): the stack creates the trust anchor and its profile. */
  caCertificatePem?: string;
  /** Or a trust anchor created outside the stack. */
  trustAnchorArn?: string;
}

export interface HostAccessProps {
  queues: Queues;
  /** compute-events, whose function URL takes the hosts' reports */
  reportFunctionArn: string;
  /**
   * snapshots' data: a host puts the ones it takes and gets the ones it boots; and the disks of
   * resizes and cold migrations, which a source puts, its destination gets, and either removes
   */
  imagesBucket: s3.IBucket;
  /** Off when absent: hosts then take their sessions from EC2 instance-profile roles only. */
  rolesAnywhere?: RolesAnywhereTrust;
  /**
   * The IAM path (`/…/`) of the roles that may take a host session: each EC2 host's
   * instance-profile role, and ComputeHostRole itself (the Roles Anywhere hop).
   */
  hostRolePath: string;
}

export class HostAccess {
  readonly computeAgentPolicy: iam.ManagedPolicy;
  readonly computeHostRole: iam.Role;
  readonly computeHostAssumePolicy: iam.ManagedPolicy;
  /** the Roles Anywhere trust anchor the role trusts, when on */
  readonly trustAnchorArn: string | undefined;

  constructor(stack: Stack, props: HostAccessProps) {
    const { queues } = props;
    const hostTag = `\${aws:PrincipalTag/${HOST_TAG}}`;
    this.computeAgentPolicy = new iam.ManagedPolicy(stack, "ComputeAgentPolicy", {
      description: "novaless compute host: its own queue (by principal tag) and compute-events, nothing else",
      statements: [
        new iam.PolicyStatement({
          sid: "OwnComputeQueue",
          actions: [
            "sqs:GetQueueUrl",
            "sqs:GetQueueAttributes",
            "sqs:ReceiveMessage",
            "sqs:DeleteMessage",
            "sqs:ChangeMessageVisibility",
            // its own DLQ: a message it cannot read goes there with the reason
            "sqs:SendMessage",
          ],
          resources: [queues.computeQueuesArn],
          conditions: {
            StringEquals: { [`aws:ResourceTag/${HOST_TAG}`]: hostTag },
            StringLike: { "aws:userid": `*:${hostTag}` },
          },
        }),
        // Any host may boot any image, so reads are not per host; S3 has no per-object tags to
        // scope writes by (the image ids are the API's, unguessable, and the reports say which)
        new iam.PolicyStatement({
          sid: "Images",
          // (PutObject also covers a multipart upload's steps; a failed one is aborted)
          actions: ["s3:PutObject", "s3:AbortMultipartUpload", "s3:GetObject"],
          resources: [props.imagesBucket.arnForObjects(`${IMAGES_PREFIX}*`)],
          conditions: { StringLike: { "aws:userid": `*:${hostTag}` } },
        }),
        // A resize's or cold migration's disk, from its source to its destination: named by the
        // migration's uuid (the conductor's), removed by the source once confirmed or reverted
        new iam.PolicyStatement({
          sid: "MigrationDisks",
          actions: ["s3:PutObject", "s3:AbortMultipartUpload", "s3:GetObject", "s3:DeleteObject"],
          resources: [props.imagesBucket.arnForObjects(`${MIGRATIONS_PREFIX}*`)],
          conditions: { StringLike: { "aws:userid": `*:${hostTag}` } },
        }),
        // Reports go to compute-events' function URL (AWS_IAM), which needs both actions since
        // 2025-10; InvokeFunction only through the URL, where Lambda hands the function the
        // signer's session (a plain Invoke would not say who called).
        new iam.PolicyStatement({
          sid: "Report",
          actions: ["lambda:InvokeFunctionUrl"],
          resources: [props.reportFunctionArn],
          conditions: {
            StringEquals: { "lambda:FunctionUrlAuthType": "AWS_IAM" },
            StringLike: { "aws:userid": `*:${hostTag}`, [`aws:PrincipalTag/${HOST_TAG}`]: "?*" },
          },
        }),
        new iam.PolicyStatement({
          sid: "ReportViaUrl",
          actions: ["lambda:InvokeFunction"],
          resources: [props.reportFunctionArn],
          conditions: {
            Bool: { "lambda:InvokedViaFunctionUrl": "true" },
            StringLike: { "aws:userid": `*:${hostTag}`, [`aws:PrincipalTag/${HOST_TAG}`]: "?*" },
          },
        }),
      ],
    });
    // The role hosts' sessions are of. Who may take a session, and with which tag, is the trust
    // policy's: a role under the hosts' path that carries `novaless-host` itself (an EC2
    // instance-profile role tagged per host), or a Roles Anywhere session of this role whose
    // certificate CN is the host, may tag the session only with its own value and must name it so.
    this.computeHostRole = new iam.Role(stack, "ComputeHostRole", {
      description: "novaless compute host sessions (tagged novaless-host=<host>, named <host>)",
      // under the hosts' path: its own Roles Anywhere sessions take the tagged session below
      path: props.hostRolePath,
      // Only roles under the path, not every principal of the account that could carry the tag.
      // A path and not a list of roles: a trust policy holds at most 4,096 characters (2,048 by
      // default), far fewer than a fleet's role ARNs.
      assumedBy: new iam.AccountPrincipal(stack.account)
        .withConditions(hostSession(`\${aws:PrincipalTag/${HOST_TAG}}`, props.hostRolePath))
        .withSessionTags(),
      managedPolicies: [this.computeAgentPolicy],
      maxSessionDuration: Duration.hours(12),
    });
    this.trustAnchorArn = props.rolesAnywhere ? this.trustRolesAnywhere(stack, props) : undefined;

    // Taking the tagged session also needs an identity policy allowing it (a trust policy naming
    // the account delegates to the account's own policies): attached here to the role itself for
    // the Roles Anywhere session, and by the operator to each EC2 host's instance-profile role.
    // Attached from the policy's side (its Roles), so the role does not depend on it (no cycle).
    this.computeHostAssumePolicy = new iam.ManagedPolicy(stack, "ComputeHostAssumePolicy", {
      description: "take a host's tagged session of ComputeHostRole (the trust policy checks the tag)",
      statements: [
        new iam.PolicyStatement({
          sid: "TakeHostSession",
          actions: ["sts:AssumeRole", "sts:TagSession"],
          resources: [this.computeHostRole.roleArn],
        }),
      ],
    });
    this.computeHostAssumePolicy.attachToRole(this.computeHostRole);
    // what `novaless-compute --stack-outputs` reads, with compute-events' function URL (ComputeEventsUrl)
    new CfnOutput(stack, "ComputeAgentPolicyArn", { value: this.computeAgentPolicy.managedPolicyArn });
    new CfnOutput(stack, "ComputeHostRoleArn", { value: this.computeHostRole.roleArn });
    new CfnOutput(stack, "ComputeHostAssumePolicyArn", {
      value: this.computeHostAssumePolicy.managedPolicyArn,
    });
    new CfnOutput(stack, "HostRolePath", { value: props.hostRolePath });

    NagSuppressions.addResourceSuppressions(this.computeAgentPolicy, [
      {
        id: "AwsSolutions-IAM5",
        reason: `${COMPUTE_QUEUES_REASON}; the statement matches only the queues tagged with the session's own novaless-host`,
        appliesTo: [computeQueuesFinding(queues.computeQueuePrefix)],
      },
      { id: "AwsSolutions-IAM5", reason: IMAGES_REASON, appliesTo: [imagesFinding(props.imagesBucket)] },
      {
        id: "AwsSolutions-IAM5",
        reason:
          "A move's disk object is named by the migration's uuid, made by the conductor: the grant is to the images bucket's migrations/ prefix only",
        appliesTo: [imagesFinding(props.imagesBucket, MIGRATIONS_PREFIX)],
      },
    ]);
  }

  /**
   * A certificate from the operator's CA, through this trust anchor only, gets a session of this
   * role whose tags are the certificate's (x509Subject/CN = the host); that session then takes
   * its tagged session (the role is under the hosts' path). Returns the trust anchor's ARN.
   */
  private trustRolesAnywhere(stack: Stack, props: HostAccessProps): string {
    const ra = props.rolesAnywhere!;
    if (Boolean(ra.caCertificatePem) === Boolean(ra.trustAnchorArn))
      throw new Error("Roles Anywhere needs exactly one of a CA certificate or a trust anchor ARN");
    let anchorArn = ra.trustAnchorArn;
    if (ra.caCertificatePem) {
      const anchor = new rolesanywhere.CfnTrustAnchor(stack, "HostsTrustAnchor", {
        name: `${stack.stackName}-hosts`,
        enabled: true,
        source: {
          sourceType: "CERTIFICATE_BUNDLE",
          sourceData: { x509CertificateData: ra.caCertificatePem },
        },
      });
      const profile = new rolesanywhere.CfnProfile(stack, "HostsProfile", {
        name: `${stack.stackName}-hosts`,
        enabled: true,
        roleArns: [this.computeHostRole.roleArn],
        durationSeconds: 3600,
      });
      anchorArn = anchor.attrTrustAnchorArn;
      new CfnOutput(stack, "HostsTrustAnchorArn", { value: anchor.attrTrustAnchorArn });
      new CfnOutput(stack, "HostsProfileArn", { value: profile.attrProfileArn });
    }
    // Roles Anywhere's own call: only through this account's anchor (the confused deputy guard
    // AWS recommends), only for the operator's CA.
    this.computeHostRole.assumeRolePolicy!.addStatements(
      new iam.PolicyStatement({
        sid: "RolesAnywhere",
        actions: ["sts:AssumeRole", "sts:TagSession", "sts:SetSourceIdentity"],
        principals: [new iam.ServicePrincipal("rolesanywhere.amazonaws.com")],
        conditions: {
          ArnEquals: { "aws:SourceArn": anchorArn! },
          StringEquals: {
            "aws:SourceAccount": Aws.ACCOUNT_ID,
            "aws:PrincipalTag/x509Issuer/CN": ra.issuerCn,
          },
        },
      }),
      new iam.PolicyStatement({
        sid: "RolesAnywhereCertificate",
        actions: ["sts:AssumeRole", "sts:TagSession"],
        principals: [new iam.AccountPrincipal(stack.account)],
        // biome-ignore lint/suspicious/noTemplateCurlyInString: an IAM policy variable, not a template
        conditions: hostSession("${aws:PrincipalTag/x509Subject/CN}", props.hostRolePath),
      }),
    );
    return anchorArn!;
  }
}

/** The session is tagged and named as the host `identity` is, and asked for by a hosts' role. */
function hostSession(identity: string, hostRolePath: string): Record<string, unknown> {
  return {
    StringEquals: { [`aws:RequestTag/${HOST_TAG}`]: identity, "sts:RoleSessionName": identity },
    "ForAllValues:StringEquals": { "aws:TagKeys": [HOST_TAG] },
    ArnLike: { "aws:PrincipalArn": `arn:${Aws.PARTITION}:iam::${Aws.ACCOUNT_ID}:role${hostRolePath}*` },
  };
}
