// refresh_instance_security_rules and refresh_port_filters (one cast a host for its servers) on a
// host: the guest's ports' filters handed to the driver's applyPortFilters; a port's filter
// computed before the one applied to it last (SQS reordered them) changes nothing; a guest not
// here, and a driver that cannot filter (exec), are left alone.
import { describe, expect, it } from "vitest";
import { BuildPath, type Reporter } from "../../../lib/compute/build-path.js";
import type { GuestPort } from "../../../lib/compute/drivers/driver.js";
import { FakeDriver } from "../../../lib/compute/drivers/fake.js";
import { log } from "../../../lib/log.js";
import {
  type RefreshInstanceSecurityRules,
  type RefreshPortFilters,
  receivedComputeMessage,
  refreshInstanceSecurityRulesV1,
  refreshPortFiltersV1,
} from "../../../lib/messages/compute.js";
import type { PortFilter } from "../../../lib/messages/port-filter.js";
import { guestSpec } from "./guest-fixture.js";

const ID = "6f1c2d3e-0000-4000-8000-000000000009";
const PORT = "7a1c2d3e-0000-4000-8000-000000000001";

const filter = (cidr: string): PortFilter => ({
  port_security_enabled: true,
  security_groups: ["8b1c2d3e-0000-4000-8000-000000000001"],
  rules: [
    {
      direction: "ingress",
      ethertype: "IPv4",
      protocol: "tcp",
      port_range_min: 22,
      port_range_max: 22,
      remote_ips: [cidr],
    },
  ],
});

const port = (f: PortFilter): GuestPort => ({
  port_id: PORT,
  network_id: "9c1c2d3e-0000-4000-8000-000000000001",
  network_name: "public",
  mac_address: "fa:16:3e:00:00:09",
  fixed_ips: [],
  network_type: "flat",
  physical_network: "physnet1",
  segmentation_id: null,
  mtu: 1500,
  filter: f,
});

const refresh = (f: PortFilter, computedAt: number): RefreshInstanceSecurityRules =>
  refreshInstanceSecurityRulesV1.parse({
    version: 1,
    kind: "refresh_instance_security_rules",
    request_id: "req-1",
    instance_uuid: ID,
    host: "h",
    ports: [port(f)],
    computed_at: computedAt,
  });

function setup(driver = new FakeDriver({ host: "h", buildMs: 0, failAll: false })) {
  const reporter = { send: async () => ({ delivered: Promise.resolve(true) }) } as unknown as Reporter;
  const path = new BuildPath("h", driver, reporter, log) as unknown as {
    refreshSecurityRules(msg: RefreshInstanceSecurityRules, l: typeof log): Promise<void>;
  };
  return { driver, path };
}

describe("refresh_instance_security_rules on a host", () => {
  it("hands the guest's ports' filters to the driver; a repeat applies the same again", async () => {
    const { driver, path } = setup();
    driver.adopt(guestSpec(ID));
    await path.refreshSecurityRules(refresh(filter("10.0.0.1/32"), 10), log);
    expect(driver.portFilters.get(ID)?.get(PORT)).toEqual(filter("10.0.0.1/32"));
    await path.refreshSecurityRules(refresh(filter("10.0.0.1/32"), 10), log);
    expect(driver.filterApplies.get(ID)).toBe(2);
    expect(driver.portFilters.get(ID)?.get(PORT)).toEqual(filter("10.0.0.1/32"));
  });

  it("ignores one computed before the one it applied last", async () => {
    const { driver, path } = setup();
    driver.adopt(guestSpec(ID));
    await path.refreshSecurityRules(refresh(filter("10.0.0.2/32"), 20), log);
    await path.refreshSecurityRules(refresh(filter("10.0.0.1/32"), 10), log);
    expect(driver.portFilters.get(ID)?.get(PORT)).toEqual(filter("10.0.0.2/32"));
    expect(driver.filterApplies.get(ID)).toBe(1);
  });

  it("leaves alone a guest that is not here, and a driver without the hook", async () => {
    const { driver, path } = setup();
    await path.refreshSecurityRules(refresh(filter("10.0.0.1/32"), 1), log);
    expect(driver.portFilters.has(ID)).toBe(false);
    const blind = new FakeDriver({ host: "h", buildMs: 0, failAll: false });
    blind.adopt(guestSpec(ID));
    Object.defineProperty(blind, "applyPortFilters", { value: undefined });
    const other = setup(blind);
    await other.path.refreshSecurityRules(refresh(filter("10.0.0.1/32"), 1), log);
    expect(blind.filterApplies.has(ID)).toBe(false);
  });
});

describe("refresh_port_filters on a host: one cast for its servers", () => {
  const ID2 = "6f1c2d3e-0000-4000-8000-000000000010";
  const PORT2 = "7a1c2d3e-0000-4000-8000-000000000002";
  const other = (f: PortFilter): GuestPort => ({
    ...port(f),
    port_id: PORT2,
    mac_address: "fa:16:3e:00:00:0a",
  });
  const hostRefresh = (
    computedAt: number,
    instances: { instance_uuid: string; ports: GuestPort[] }[],
  ): RefreshPortFilters =>
    refreshPortFiltersV1.parse({
      version: 1,
      kind: "refresh_port_filters",
      request_id: "req-2",
      host: "h",
      computed_at: computedAt,
      instances,
    });
  const hostPath = (driver: FakeDriver) =>
    setup(driver).path as unknown as {
      refreshPortFilters(msg: RefreshPortFilters, l: typeof log): Promise<void>;
    };

  it("applies each server's ports; a server not here is skipped, the others still applied", async () => {
    const driver = new FakeDriver({ host: "h", buildMs: 0, failAll: false });
    driver.adopt(guestSpec(ID));
    await hostPath(driver).refreshPortFilters(
      hostRefresh(5, [
        { instance_uuid: ID2, ports: [other(filter("10.0.0.7/32"))] },
        { instance_uuid: ID, ports: [port(filter("10.0.0.3/32"))] },
      ]),
      log,
    );
    expect(driver.portFilters.get(ID)?.get(PORT)).toEqual(filter("10.0.0.3/32"));
    expect(driver.portFilters.has(ID2)).toBe(false);
  });

  it("orders per port: a port's older filter is ignored, another port of the guest still applied, the guest's other ports kept", async () => {
    const driver = new FakeDriver({ host: "h", buildMs: 0, failAll: false });
    driver.adopt(guestSpec(ID));
    const path = hostPath(driver);
    await path.refreshPortFilters(
      hostRefresh(20, [{ instance_uuid: ID, ports: [port(filter("10.0.0.2/32"))] }]),
      log,
    );
    // computed before the first, for both ports: PORT's is stale, PORT2's was never applied
    await path.refreshPortFilters(
      hostRefresh(10, [
        { instance_uuid: ID, ports: [port(filter("10.0.0.1/32")), other(filter("10.0.0.9/32"))] },
      ]),
      log,
    );
    expect(driver.portFilters.get(ID)?.get(PORT)).toEqual(filter("10.0.0.2/32"));
    expect(driver.portFilters.get(ID)?.get(PORT2)).toEqual(filter("10.0.0.9/32"));
    expect(driver.filterApplies.get(ID)).toBe(2);
    // a repeat of the newest (at-least-once delivery) applies it again, harmlessly
    await path.refreshPortFilters(
      hostRefresh(20, [{ instance_uuid: ID, ports: [port(filter("10.0.0.2/32"))] }]),
      log,
    );
    expect(driver.portFilters.get(ID)?.get(PORT)).toEqual(filter("10.0.0.2/32"));
    expect(driver.portFilters.get(ID)?.get(PORT2)).toEqual(filter("10.0.0.9/32"));
  });

  it("is what a host accepts off its queue, and names no server itself", () => {
    const msg = hostRefresh(1, [{ instance_uuid: ID, ports: [port(filter("10.0.0.1/32"))] }]);
    expect(receivedComputeMessage.parse(msg)).toEqual(msg);
    expect(receivedComputeMessage.safeParse({ ...msg, instances: [] }).success).toBe(false);
  });
});
