// What a compute host may do: no database, its own queue, and compute-events. Nova's
// nova-compute never touches the database. A host's credentials are a session of
// ComputeHostRole tagged `novaless-host=<host>` and named <host>: its own queue and DLQ carry
// the same tag (the consumer creates them), and it may send only to compute-events, only as a
// session named after its tag, so SenderId names the host (the consumer checks reports against
// it). A session without the tag matches nothing.
import { CfnOutput, Duration, type Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import { NagSuppressions } from "cdk-nag";
import { HOST_TAG } from "../../lib/resources.js";
import { COMPUTE_QUEUES_REASON, computeQueuesFinding } from "./nag.js";
import type { Queues } from "./queues.js";

export interface HostAccessProps {
  queues: Queues;
  /** The CN of the CA certificate of the IAM Roles Anywhere trust anchor for on-premises hosts. */
  rolesAnywhereIssuerCn: string;
}

export class HostAccess {
  readonly computeAgentPolicy: iam.ManagedPolicy;
  readonly computeHostRole: iam.Role;
  readonly computeHostAssumePolicy: iam.ManagedPolicy;

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
        new iam.PolicyStatement({
          sid: "Report",
          actions: ["sqs:SendMessage"],
          resources: [queues.computeEvents.queueArn],
          conditions: {
            StringLike: { "aws:userid": `*:${hostTag}`, [`aws:PrincipalTag/${HOST_TAG}`]: "?*" },
          },
        }),
      ],
    });
    // The role hosts' sessions are of. Who may take a session, and with which tag, is the trust
    // policy's: a principal that carries `novaless-host` itself (an EC2 instance-profile role
    // tagged per host, or an IAM Roles Anywhere session whose certificate CN is the host) may
    // tag the session only with its own value and must name it so.
    const rolesAnywhere = { StringEquals: { "aws:PrincipalTag/x509Issuer/CN": props.rolesAnywhereIssuerCn } };
    this.computeHostRole = new iam.Role(stack, "ComputeHostRole", {
      description: "novaless compute host sessions (tagged novaless-host=<host>, named <host>)",
      // IAM Roles Anywhere, for hypervisors outside AWS: a certificate from the operator's CA
      // gets a session whose tags are the certificate's (x509Subject/CN = the host), which then
      // takes its tagged session below.
      assumedBy: new iam.ServicePrincipal("rolesanywhere.amazonaws.com").withConditions(rolesAnywhere),
      managedPolicies: [this.computeAgentPolicy],
      maxSessionDuration: Duration.hours(12),
    });
    const trust = this.computeHostRole.assumeRolePolicy!;
    trust.addStatements(
      new iam.PolicyStatement({
        actions: ["sts:TagSession", "sts:SetSourceIdentity"],
        principals: [new iam.ServicePrincipal("rolesanywhere.amazonaws.com")],
        conditions: rolesAnywhere,
      }),
    );
    // A principal may tag its session only with the host it is, and name it so: an EC2
    // instance-profile role tagged `novaless-host`, or the Roles Anywhere session's CN.
    for (const [sid, identity] of [
      ["TaggedPrincipal", `\${aws:PrincipalTag/${HOST_TAG}}`],
      // biome-ignore lint/suspicious/noTemplateCurlyInString: an IAM policy variable, not a template
      ["RolesAnywhereCertificate", "${aws:PrincipalTag/x509Subject/CN}"],
    ] as const) {
      trust.addStatements(
        new iam.PolicyStatement({
          sid,
          actions: ["sts:AssumeRole", "sts:TagSession"],
          principals: [new iam.AccountPrincipal(stack.account)],
          conditions: {
            StringEquals: { [`aws:RequestTag/${HOST_TAG}`]: identity, "sts:RoleSessionName": identity },
            "ForAllValues:StringEquals": { "aws:TagKeys": [HOST_TAG] },
          },
        }),
      );
    }

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
    // what `novaless-compute --stack-outputs` reads, with the compute-events queue's URLs
    new CfnOutput(stack, "ComputeAgentPolicyArn", { value: this.computeAgentPolicy.managedPolicyArn });
    new CfnOutput(stack, "ComputeHostRoleArn", { value: this.computeHostRole.roleArn });
    new CfnOutput(stack, "ComputeHostAssumePolicyArn", {
      value: this.computeHostAssumePolicy.managedPolicyArn,
    });

    NagSuppressions.addResourceSuppressions(this.computeAgentPolicy, [
      {
        id: "AwsSolutions-IAM5",
        reason: `${COMPUTE_QUEUES_REASON}; the statement matches only the queues tagged with the session's own novaless-host`,
        appliesTo: [computeQueuesFinding(queues.computeQueuePrefix)],
      },
    ]);
  }
}
