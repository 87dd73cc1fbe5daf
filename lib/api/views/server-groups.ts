// Nova's os-server-groups view, microversion 2.64 shape: one policy and its rules, members shown
// only while they are live servers.
import type { ServerGroup } from "../../catalog/types.js";

export function serverGroupView(g: ServerGroup, liveMembers: readonly string[]): Record<string, unknown> {
  return {
    id: g.id,
    name: g.name,
    policy: g.policy,
    rules: { ...g.rules },
    members: [...liveMembers],
    project_id: g.project_id,
    user_id: g.user_id,
  };
}
