// Quota-set bodies as Nova's schemas take them, per microversion.
import { describe, expect, it } from "vitest";
import { ApiVersion } from "../../../lib/api/microversion.js";
import {
  checkNotBelowUsage,
  parseQuotaUpdate,
  quotaClassResources,
  quotaSetResources,
} from "../../../lib/api/validation/quotas.js";

const v = (s: string) => ApiVersion.parse(s);
const parse = (body: unknown, at = "2.1") => parseQuotaUpdate(body, "quota_set", quotaSetResources(v(at)));

describe("quota set updates", () => {
  it("integers or numeric strings from -1, and force", () => {
    expect(parse({ quota_set: { instances: "5", cores: -1, force: "True" } })).toEqual({
      set: { instances: 5, cores: -1 },
      force: true,
    });
    expect(() => parse({ quota_set: { instances: -2 } })).toThrow(
      "Invalid input for field/attribute instances. Value: -2. -2 is less than the minimum of -1",
    );
    expect(() => parse({ quota_set: { ram: "lots" } })).toThrow(
      "Invalid input for field/attribute ram. Value: lots. 'lots' does not match '^-?[0-9]+$'",
    );
    expect(() => parse({})).toThrow("'quota_set' is a required property");
  });

  it("the resources of the version: network quotas until 2.35, injected files until 2.56", () => {
    expect(parse({ quota_set: { floating_ips: 3 } }, "2.35").set).toEqual({ floating_ips: 3 });
    expect(() => parse({ quota_set: { floating_ips: 3 } }, "2.36")).toThrow(
      "Additional properties are not allowed ('floating_ips' was unexpected)",
    );
    expect(parse({ quota_set: { injected_files: 3 } }, "2.56").set).toEqual({ injected_files: 3 });
    expect(() => parse({ quota_set: { injected_files: 3 } }, "2.57")).toThrow(
      "'injected_files' was unexpected",
    );
    expect(quotaClassResources(v("2.49"))).not.toContain("server_groups");
    expect(quotaClassResources(v("2.50"))).toContain("server_groups");
  });

  it("a limit below what is used is refused, -1 never", () => {
    expect(() => checkNotBelowUsage({ instances: 2 }, { instances: 3 })).toThrow(
      "Quota limit 2 for instances must be greater than or equal to already used and reserved 3.",
    );
    expect(() => checkNotBelowUsage({ instances: -1 }, { instances: 3 })).not.toThrow();
  });
});
