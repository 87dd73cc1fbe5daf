// The `nova` CLI (Debian python3-novaclient 18.1; deprecated upstream but still in operators'
// scripts) against the whole local runtime, with the OS_* variables of password auth. It prints
// tables only, so the tests read the cells of its tables.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type Cloud, missing, startCloud, unique, VERSIONS } from "./harness.js";
import { atLeast, below } from "./versions.js";

// Python start-up is most of each command: several at once on two cores take their time.
vi.setConfig({ testTimeout: 300_000 });

/**
 * Every prettytable in `out` (a top border, a header row, a border, rows, a bottom border), each
 * as its rows of {header: cell}. `nova limits` prints two tables (rate, then absolute).
 */
function tables(out: string): Record<string, string>[][] {
  const cells = (l: string) =>
    l
      .slice(1, -1)
      .split("|")
      .map((c) => c.trim());
  const found: Record<string, string>[][] = [];
  let borders = 0;
  let names: string[] = [];
  for (const line of out.split("\n")) {
    if (line.startsWith("+")) {
      borders = borders === 3 ? 1 : borders + 1;
      if (borders === 1) found.push([]);
    } else if (line.startsWith("|")) {
      if (borders === 1) names = cells(line);
      else if (borders === 2)
        found.at(-1)!.push(Object.fromEntries(cells(line).map((c, i) => [names[i], c])));
    }
  }
  return found;
}

/** The rows of the last table `out` prints. */
function table(out: string): Record<string, string>[] {
  return tables(out).at(-1) ?? [];
}

/** `nova show`'s Property/Value table as an object. */
function properties(out: string): Record<string, string> {
  return Object.fromEntries(table(out).map((r) => [r.Property, r.Value]));
}

describe.skipIf(missing("nova"))("novaclient against novaless", () => {
  let cloud: Cloud;
  beforeAll(async () => {
    cloud = await startCloud();
  });
  afterAll(async () => {
    await cloud?.stop();
  });

  // versions and tests run concurrently (each call a Python process; each test its own resources)
  describe.concurrent.each(VERSIONS)("at compute microversion %s", (version) => {
    const as = (cloudName: "admin" | "demo" = "admin") => ({ cloud: cloudName, version });

    it("flavor-list, keypair-list, limits, quota-show, usage-list", async () => {
      const flavors = table(await cloud.nova(["flavor-list"], as("demo")));
      expect(flavors.find((f) => f.Name === "m1.tiny")).toMatchObject({ ID: "1", Memory_MiB: "512" });
      table(await cloud.nova(["keypair-list"], as("demo")));

      const limits = table(await cloud.nova(["limits"], as("demo")));
      expect(limits.find((l) => l.Name === "Instances")).toMatchObject({ Max: "10" });

      const quotaRows = table(await cloud.nova(["quota-show"], as("demo")));
      const quota = Object.fromEntries(quotaRows.map((r) => [r.Quota, r.Limit]));
      expect(quota).toMatchObject({ instances: "10", cores: "20", ram: "51200" });

      table(await cloud.nova(["usage-list"], as()));
    });

    it("boot --poll, list, show, meta, instance-action-list, delete", async () => {
      const name = unique("nova-vm");
      const boot = await cloud.nova(
        [
          "boot",
          "--flavor",
          "m1.tiny",
          "--image",
          "cirros",
          // from 2.37 Nova needs `networks`; without Neutron there is none to attach
          ...(atLeast(version, "2.37") ? ["--nic", "none"] : []),
          "--poll",
          name,
        ],
        as("demo"),
      );
      const id = properties(boot).id!;
      expect(id).toMatch(/^[0-9a-f-]{36}$/);

      const listed = table(await cloud.nova(["list"], as("demo")));
      expect(listed.find((s) => s.ID === id)).toMatchObject({ Name: name, Status: "ACTIVE" });

      await cloud.nova(["meta", id, "set", "owner=nova-test"], as("demo"));
      const shown = properties(await cloud.nova(["show", id], as("demo")));
      expect(shown).toMatchObject({ status: "ACTIVE", name });
      expect(shown.metadata).toContain('"owner": "nova-test"');

      const actions = table(await cloud.nova(["instance-action-list", id], as("demo")));
      expect(actions.map((a) => a.Action)).toContain("create");

      await cloud.nova(["delete", id], as("demo"));
    });

    it("hypervisor-list, service-list, availability-zone-list, aggregate-list as admin", async () => {
      const hypervisors = table(await cloud.nova(["hypervisor-list"], as()));
      expect(hypervisors.map((h) => h["Hypervisor hostname"]).sort()).toEqual([
        "host-1",
        "host-2",
        "host-3",
        "host-4",
      ]);
      if (below(version, "2.88")) {
        const stats = properties(await cloud.nova(["hypervisor-stats"], as()));
        expect(stats.count).toBe("4");
      }
      const services = table(await cloud.nova(["service-list", "--binary", "nova-compute"], as()));
      expect(services.map((s) => s.Host).sort()).toEqual(["host-1", "host-2", "host-3", "host-4"]);
      const zones = await cloud.nova(["availability-zone-list"], as("demo"));
      expect(zones).toContain("az1");
      table(await cloud.nova(["aggregate-list"], as()));
    });
  });
});
