// In-memory aggregates, server groups and scheduler dry runs for the API's unit tests: the deps
// entries behind /os-aggregates, /os-availability-zone, /os-server-groups and os-scheduler/plan.
import type { ApiDeps } from "../../../lib/api/deps.js";
import type { Aggregate, ServerGroup } from "../../../lib/catalog/types.js";
import type { PlanResult } from "../../../lib/scheduler/manager.js";
import type { RequestSpec } from "../../../lib/scheduler/types.js";

export interface CatalogFakes {
  aggregates: Map<string, { aggregate: Aggregate; revision: number }>;
  serverGroups: Map<string, ServerGroup>;
  /** the member pointers a delete follows */
  groupOf: Map<string, string>;
  /** every spec planDestinations was asked about */
  planned: RequestSpec[];
  /** what planDestinations answers */
  plan: PlanResult;
  /** the next n saveAggregate calls lose a race */
  loseSaves: number;
}

type CatalogDeps = Pick<
  ApiDeps,
  | "listAggregates"
  | "getAggregateRevision"
  | "createAggregate"
  | "saveAggregate"
  | "deleteAggregate"
  | "getServerGroup"
  | "listServerGroups"
  | "createServerGroup"
  | "deleteServerGroup"
  | "addServerGroupMembers"
  | "removeServerGroupMembers"
  | "forgetServerGroupMember"
  | "planDestinations"
>;

export const NO_PLAN: PlanResult = { selections: [], explanations: [], summary: "", no_valid_host: false };

export function catalogFakes(): { state: CatalogFakes; deps: CatalogDeps } {
  const s: CatalogFakes = {
    aggregates: new Map(),
    serverGroups: new Map(),
    groupOf: new Map(),
    planned: [],
    plan: NO_PLAN,
    loseSaves: 0,
  };
  const remove = (id: string, uuids: string[]) => {
    const g = s.serverGroups.get(id);
    if (!g) return false;
    g.members = g.members.filter((m) => !uuids.includes(m));
    return true;
  };
  const deps: CatalogDeps = {
    listAggregates: async () =>
      [...s.aggregates.values()]
        .map((a) => structuredClone(a.aggregate))
        .sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id)),
    getAggregateRevision: async (id) => structuredClone(s.aggregates.get(id)),
    createAggregate: async (a) => {
      if ([...s.aggregates.values()].some((x) => x.aggregate.name === a.name)) {
        return { ok: false, reason: "name-exists" };
      }
      const number = Math.max(0, ...[...s.aggregates.values()].map((x) => x.aggregate.number ?? 0)) + 1;
      const created = { ...structuredClone(a), number };
      s.aggregates.set(a.id, { aggregate: created, revision: 1 });
      return { ok: true, aggregate: structuredClone(created) };
    },
    saveAggregate: async (a, revision) => {
      const cur = s.aggregates.get(a.id);
      if (s.loseSaves > 0 && cur) {
        s.loseSaves--;
        cur.revision++;
        return false;
      }
      if (!cur || cur.revision !== revision) return false;
      s.aggregates.set(a.id, { aggregate: structuredClone(a), revision: revision + 1 });
      return true;
    },
    deleteAggregate: async (id, revision) => {
      if (s.aggregates.get(id)?.revision !== revision) return false;
      s.aggregates.delete(id);
      return true;
    },
    getServerGroup: async (id) => structuredClone(s.serverGroups.get(id)),
    listServerGroups: async (projectId) =>
      [...s.serverGroups.values()]
        .filter((g) => !projectId || g.project_id === projectId)
        .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id))
        .map((g) => structuredClone(g)),
    createServerGroup: async (g) => {
      s.serverGroups.set(g.id, structuredClone(g));
      return structuredClone(g);
    },
    deleteServerGroup: async (id) => s.serverGroups.delete(id),
    addServerGroupMembers: async (id, uuids, max) => {
      const g = s.serverGroups.get(id);
      if (!g) return { ok: false, reason: "not-found" };
      const fresh = [...new Set(uuids)].filter((u) => !g.members.includes(u));
      if (g.members.length + fresh.length > max) {
        return { ok: false, reason: "over-quota", group: structuredClone(g) };
      }
      g.members.push(...fresh);
      for (const u of fresh) s.groupOf.set(u, id);
      return { ok: true, group: structuredClone(g) };
    },
    removeServerGroupMembers: async (id, uuids) => remove(id, uuids),
    forgetServerGroupMember: async (instanceId) => {
      const id = s.groupOf.get(instanceId);
      if (id) remove(id, [instanceId]);
      s.groupOf.delete(instanceId);
    },
    planDestinations: async (spec) => {
      s.planned.push(structuredClone(spec));
      return structuredClone(s.plan);
    },
  };
  return { state: s, deps };
}
