// A rebuild's check (Nova's request_is_rebuild): the server's own host, forced, under
// scheduler_hints._nova_check_type = ["rebuild"]. Only the filters Nova marks RUN_ON_REBUILD run;
// Placement is not asked (the instance keeps its allocation), so a full or disabled host passes
// and an image its hypervisor cannot run does not.
import { describe, expect, it } from "vitest";
import { FILTERS } from "../../../lib/scheduler/filters/index.js";
import { filterAndWeigh, forcesHosts, requestIsRebuild } from "../../../lib/scheduler/pipeline.js";
import type { HostState, RequestSpec } from "../../../lib/scheduler/types.js";
import { config, flavor, fleet, host, inventory, spec } from "./fixtures.js";

/** Nova's filters with RUN_ON_REBUILD = True (nova/scheduler/filters/*.py). */
const NOVA_RUN_ON_REBUILD = [
  "AggregateImagePropertiesIsolation",
  "ImagePropertiesFilter",
  "IsolatedHostsFilter",
];

const rebuildOf = (s: RequestSpec, h: string): RequestSpec => ({
  ...s,
  force_hosts: [h],
  force_nodes: [h],
  scheduler_hints: { ...s.scheduler_hints, _nova_check_type: ["rebuild"] },
});

function check(hosts: HostState[], s: RequestSpec, enabled = [...FILTERS.keys()]) {
  const d = filterAndWeigh(fleet(hosts), s, { index: 0, config: config({ enabled_filters: enabled }) });
  const detailed = d.detailed();
  return {
    candidates: detailed.order.map((o) => o.host),
    stages: Object.fromEntries(detailed.stages.map((st) => [st.stage, st.skipped ?? "ran"])),
    rejected: detailed.stages.flatMap((st) => st.rejected.map((r) => `${st.stage}: ${r.host}`)),
  };
}

describe("RUN_ON_REBUILD", () => {
  it.each([...FILTERS.keys()])("%s declares Nova's RUN_ON_REBUILD", (name) => {
    expect(FILTERS.get(name)!.runOnRebuild).toBe(NOVA_RUN_ON_REBUILD.includes(name));
  });

  it("a rebuild is only Nova's exact hint; it still runs filters though it forces its host", () => {
    expect(requestIsRebuild(spec({ scheduler_hints: { _nova_check_type: ["rebuild"] } }))).toBe(true);
    expect(requestIsRebuild(spec({ scheduler_hints: { _nova_check_type: ["evacuate"] } }))).toBe(false);
    expect(requestIsRebuild(spec())).toBe(false);
    expect(forcesHosts(rebuildOf(spec(), "h1"))).toBe(false);
  });
});

describe("a rebuild's check of its host", () => {
  // full (its own instance counted) and disabled: a build would never land here
  const full = host("h1", {
    resources: { ...host("x").resources, MEMORY_MB: inventory(1024, { used: 1024 }) },
    free_ram_mb: 0,
    service: { disabled: true, disabled_reason: "maintenance" },
    traits: ["COMPUTE_STATUS_DISABLED"],
  });
  const other = host("h2");
  const big = spec({ flavor: flavor({ memory_mb: 1024 }) });

  it("runs only the RUN_ON_REBUILD filters and skips Placement: a full, disabled host passes", () => {
    const r = check([full, other], rebuildOf(big, "h1"));
    expect(r.candidates).toEqual(["h1"]);
    expect(r.stages.placement).toBe("rebuild: the instance keeps its allocation");
    for (const name of FILTERS.keys()) {
      expect(r.stages[name], name).toBe(
        NOVA_RUN_ON_REBUILD.includes(name) ? "ran" : "rebuild (RUN_ON_REBUILD is False)",
      );
    }
    // the same host, for a build: Placement turns it away
    expect(check([full, other], big).candidates).toEqual(["h2"]);
  });

  it("an image the host's hypervisor cannot run is refused (NoValidHost)", () => {
    const arm = rebuildOf(
      spec({ image: { id: "arm", name: "arm", properties: { hw_architecture: "aarch64" } } }),
      "h1",
    );
    const r = check([full, other], arm);
    expect(r.candidates).toEqual([]);
    expect(r.rejected).toEqual(["force_hosts: h2", "ImagePropertiesFilter: h1"]);
  });

  it("isolated images are judged on rebuild too (IsolatedHostsFilter)", () => {
    const s = rebuildOf(spec({ image: { id: "iso", name: "iso", properties: {} } }), "h1");
    const d = filterAndWeigh(fleet([full, other]), s, {
      index: 0,
      config: config({
        enabled_filters: ["IsolatedHostsFilter", "ComputeFilter"],
        isolated_images: ["iso"],
        isolated_hosts: ["h2"],
      }),
    });
    expect(d.detailed().order).toEqual([]);
  });
});
