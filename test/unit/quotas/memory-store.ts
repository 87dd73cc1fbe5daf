// The quota store in memory, with the DynamoDB store's semantics (lib/quotas/store.ts), for the
// API's unit tests.
import {
  checkDelta,
  checkInstances,
  deltaOf,
  effectiveLimits,
  type Limits,
  type Usage,
} from "../../../lib/quotas/quotas.js";
import type { QuotaStore } from "../../../lib/quotas/store.js";

export interface MemoryQuotas {
  defaults: Partial<Limits>;
  projects: Map<string, Partial<Limits>>;
  usage: Map<string, Usage>;
}

export function memoryQuotaStore(
  state: MemoryQuotas = { defaults: {}, projects: new Map(), usage: new Map() },
): {
  state: MemoryQuotas;
  store: QuotaStore;
} {
  const usage = (p: string) => ({ ...(state.usage.get(p) ?? { instances: 0, cores: 0, ram: 0 }) });
  const limits = async (p: string) => effectiveLimits(state.defaults, state.projects.get(p));
  const add = (p: string, d: Usage, sign: number) => {
    const u = usage(p);
    state.usage.set(p, {
      instances: u.instances + sign * d.instances,
      cores: u.cores + sign * d.cores,
      ram: u.ram + sign * d.ram,
    });
  };
  const store: QuotaStore = {
    getDefaultLimits: async () => effectiveLimits(state.defaults),
    setDefaultLimits: async (set) => {
      Object.assign(state.defaults, set);
    },
    getProjectLimits: limits,
    setProjectLimits: async (p, set) => {
      state.projects.set(p, { ...state.projects.get(p), ...set });
    },
    deleteProjectLimits: async (p) => {
      state.projects.delete(p);
    },
    getUsage: async (p) => usage(p),
    reserveInstances: async (p, flavor, min, max) => {
      const check = checkInstances(await limits(p), usage(p), flavor, min, max);
      if (!check.ok) return check;
      const delta = deltaOf(check.count, flavor);
      add(p, delta, 1);
      return { ok: true, count: check.count, delta };
    },
    reserveDelta: async (p, delta) => {
      const check = checkDelta(await limits(p), usage(p), delta);
      if (!check.ok) return check;
      add(p, delta, 1);
      return { ok: true, count: 0, delta };
    },
    releaseUsage: async (p, d) => add(p, d, -1),
  };
  return { state, store };
}
