// The quota arithmetic and Nova's messages.
import { describe, expect, it } from "vitest";
import {
  checkInstances,
  configuredDefaults,
  effectiveLimits,
  NOVA_DEFAULTS,
} from "../../../lib/quotas/quotas.js";

const limits = effectiveLimits({});
const flavor = (vcpus: number, memory_mb: number) => ({ vcpus, memory_mb });

describe("checkInstances", () => {
  it("Nova's defaults", () => {
    expect(NOVA_DEFAULTS).toMatchObject({
      instances: 10,
      cores: 20,
      ram: 51200,
      metadata_items: 128,
      key_pairs: 100,
      server_groups: 10,
      server_group_members: 10,
    });
  });

  it("the instances message, as Nova's TooManyInstances", () => {
    expect(checkInstances(limits, { instances: 9, cores: 9, ram: 4608 }, flavor(1, 512), 3, 3)).toEqual({
      ok: false,
      message: "Quota exceeded for instances: Requested 3, but already used 9 of 10 instances",
    });
  });

  it("cores alone, and several resources joined with ', ' in sorted order", () => {
    expect(checkInstances(limits, { instances: 5, cores: 18, ram: 0 }, flavor(4, 512), 1, 1)).toEqual({
      ok: false,
      message: "Quota exceeded for cores: Requested 4, but already used 18 of 20 cores",
    });
    expect(checkInstances(limits, { instances: 9, cores: 18, ram: 50000 }, flavor(4, 2048), 2, 2)).toEqual({
      ok: false,
      message:
        "Quota exceeded for cores, instances, ram: Requested 8, 2, 4096, but already used 18, 9, 50000 of 20, 10, 51200 cores, instances, ram",
    });
  });

  it("max_count is reduced to what fits when that is at least min_count; min-max printed otherwise", () => {
    expect(checkInstances(limits, { instances: 6, cores: 6, ram: 0 }, flavor(1, 512), 1, 8)).toEqual({
      ok: true,
      count: 4,
    });
    expect(checkInstances(limits, { instances: 0, cores: 14, ram: 0 }, flavor(2, 512), 2, 5)).toEqual({
      ok: true,
      count: 3,
    });
    expect(checkInstances(limits, { instances: 8, cores: 8, ram: 0 }, flavor(1, 512), 3, 5)).toEqual({
      ok: false,
      message: "Quota exceeded for instances: Requested 3-5, but already used 8 of 10 instances",
    });
  });

  it("-1 is unlimited", () => {
    const unl = effectiveLimits({ instances: -1 }, { cores: -1, ram: -1 });
    expect(
      checkInstances(unl, { instances: 1000, cores: 64000, ram: 1e9 }, flavor(64, 1 << 20), 50, 50),
    ).toEqual({
      ok: true,
      count: 50,
    });
  });

  it("limits: the project's over the class's over the configured over Nova's", () => {
    expect(effectiveLimits({ cores: 40 }, { cores: 8 }).cores).toBe(8);
    expect(effectiveLimits({ cores: 40 }).cores).toBe(40);
    expect(
      configuredDefaults({
        NOVALESS_QUOTA_INSTANCES: "-1",
        NOVALESS_QUOTA_RAM: "x",
        NOVALESS_QUOTA_CORES: "-5",
      }),
    ).toEqual({ instances: -1 });
  });
});
