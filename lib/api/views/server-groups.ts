// Nova's os-server-groups view as a version table: a `policies` list and empty `metadata` until
// 2.63, project_id and user_id from 2.13, one `policy` with its `rules` from 2.64. Members are
// shown only while they are live servers.
import type { ServerGroup } from "../../catalog/types.js";
import { viewFields } from "../microversion.js";

export const serverGroupView = viewFields<ServerGroup, { liveMembers: readonly string[] }>([
  { fields: (g, c) => ({ id: g.id, name: g.name, members: [...c.liveMembers] }) },
  { max: "2.63", fields: (g) => ({ policies: [g.policy], metadata: {} }) },
  { min: "2.13", fields: (g) => ({ project_id: g.project_id, user_id: g.user_id }) },
  { min: "2.64", fields: (g) => ({ policy: g.policy, rules: { ...g.rules } }) },
]);
