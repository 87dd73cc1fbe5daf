// The quota store in memory, with the DynamoDB store's semantics (lib/quotas/store.ts), for the
// API's unit tests: a project's limits and its users' own, a project's usage and each user's share.
import {
  checkDeltaIn,
  checkInstancesIn,
  deltaOf,
  effectiveLimits,
  type Limits,
  limitsCounted,
  type QuotaScope,
  type Usage,
  userLimits,
} from "../../../lib/quotas/quotas.js";
import type { QuotaStore } from "../../../lib/quotas/store.js";

export interface MemoryQuotas {
  defaults: Partial<Limits>;
  projects: Map<string, Partial<Limits>>;
  /** `<project>/<user>`: a user's own limits */
  users: Map<string, Partial<Limits>>;
  /** a project's usage, and `<project>/<user>`: a user's share */
  usage: Map<string, Usage>;
}

export function memoryQuotaStore(
  state: MemoryQuotas = { defaults: {}, projects: new Map(), users: new Map(), usage: new Map() },
): {
  state: MemoryQuotas;
  store: QuotaStore;
} {
  const usage = (k: string) => ({ ...(state.usage.get(k) ?? { instances: 0, cores: 0, ram: 0 }) });
  const limits = async (p: string) => effectiveLimits(state.defaults, state.projects.get(p));
  const add = (k: string, d: Usage, sign: number) => {
    const u = usage(k);
    state.usage.set(k, {
      instances: u.instances + sign * d.instances,
      cores: u.cores + sign * d.cores,
      ram: u.ram + sign * d.ram,
    });
  };
  const addBoth = (p: string, d: Usage, sign: number, user?: string) => {
    add(p, d, sign);
    if (user) add(`${p}/${user}`, d, sign);
  };
  const scopes = async (p: string, user?: string): Promise<QuotaScope[]> => {
    const project = await limits(p);
    const own = user ? (state.users.get(`${p}/${user}`) ?? {}) : {};
    const out: QuotaScope[] = [{ limits: project, used: usage(p) }];
    if (user && limitsCounted(own))
      out.push({ limits: userLimits(project, own), used: usage(`${p}/${user}`) });
    return out;
  };
  const store: QuotaStore = {
    getDefaultLimits: async () => effectiveLimits(state.defaults),
    setDefaultLimits: async (set) => {
      Object.assign(state.defaults, set);
    },
    getProjectLimits: limits,
    getProjectQuotas: async (p) => {
      const users: Record<string, Partial<Limits>> = {};
      for (const [k, v] of state.users) if (k.startsWith(`${p}/`)) users[k.slice(p.length + 1)] = v;
      return { limits: await limits(p), users };
    },
    setProjectLimits: async (p, set) => {
      state.projects.set(p, { ...state.projects.get(p), ...set });
    },
    deleteProjectLimits: async (p) => {
      state.projects.delete(p);
      for (const k of [...state.users.keys()]) if (k.startsWith(`${p}/`)) state.users.delete(k);
    },
    setUserLimits: async (p, user, set) => {
      state.users.set(`${p}/${user}`, { ...state.users.get(`${p}/${user}`), ...set });
    },
    deleteUserLimits: async (p, user) => {
      state.users.delete(`${p}/${user}`);
    },
    getUsage: async (p, user) => usage(user ? `${p}/${user}` : p),
    reserveInstances: async (p, flavor, min, max, _known, user) => {
      const check = checkInstancesIn(await scopes(p, user), flavor, min, max);
      if (!check.ok) return check;
      const delta = deltaOf(check.count, flavor);
      addBoth(p, delta, 1, user);
      return { ok: true, count: check.count, delta };
    },
    reserveDelta: async (p, delta, user) => {
      const check = checkDeltaIn(await scopes(p, user), delta);
      if (!check.ok) return check;
      addBoth(p, delta, 1, user);
      return { ok: true, count: 0, delta };
    },
    releaseUsage: async (p, d, user) => addBoth(p, d, -1, user),
  };
  return { state, store };
}
