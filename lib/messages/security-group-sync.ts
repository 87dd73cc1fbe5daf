// build-requests' second kind: a security group's members changed (Neutron's
// security_groups_member_updated), sent once per group and sync window by whoever marked the
// group (lib/instances/security-group-refresh.ts) and applied by build-intake, which casts each
// affected host the fresh filters of its guests' ports. A build request has no `kind`; this has.
import { z } from "zod";
import { type BuildRequest, buildRequest, type Parsed, parseJsonMessage } from "./build-request.js";

export const SECURITY_GROUPS_MEMBER_UPDATED = "security_groups_member_updated";

export const securityGroupsMemberUpdatedV1 = z.object({
  version: z.literal(1),
  kind: z.literal(SECURITY_GROUPS_MEMBER_UPDATED),
  /** the change that marked the group (its request id), for the logs */
  request_id: z.string().min(1),
  security_group_id: z.string().min(1),
  /** the mark this message was sent for (epoch ms): the sync clears that mark and no newer one */
  marked_at: z.number().int().min(0),
});
export type SecurityGroupsMemberUpdated = z.infer<typeof securityGroupsMemberUpdatedV1>;

/** What build-intake reads off build-requests. */
export type BuildRequestsMessage = BuildRequest | SecurityGroupsMemberUpdated;

export const isMemberSync = (m: BuildRequestsMessage): m is SecurityGroupsMemberUpdated =>
  "kind" in m && m.kind === SECURITY_GROUPS_MEMBER_UPDATED;

/**
 * A message of build-requests: one whose `kind` says it is a member sync is read as one (and
 * refused with that schema's reason), every other as a build request.
 */
export function parseBuildRequestsMessage(body: string): Parsed<BuildRequestsMessage> {
  let kind: unknown;
  try {
    kind = (JSON.parse(body) as { kind?: unknown } | null)?.kind;
  } catch {
    // not JSON: the build request's parse says so
  }
  return kind === undefined
    ? parseJsonMessage(buildRequest, body)
    : parseJsonMessage(securityGroupsMemberUpdatedV1, body);
}
