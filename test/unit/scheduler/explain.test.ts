import { describe, expect, it } from "vitest";
import { NO_VALID_HOST_MESSAGE, NoValidHost } from "../../../lib/scheduler/errors.js";
import { summarizeNoValidHost } from "../../../lib/scheduler/explain.js";
import { filterAndWeigh } from "../../../lib/scheduler/pipeline.js";
import { config, flavor, host, inventory, spec } from "./fixtures.js";

describe("summarizeNoValidHost", () => {
  it("counts rejections by kind, largest first, with the largest free amount", () => {
    const hosts = [
      ...[1024, 4096, 2048, 0, 512].map((free, i) =>
        host(`small${i}`, {
          resources: { ...host("x").resources, MEMORY_MB: inventory(8192, { used: 8192 - free }) },
        }),
      ),
      ...[0, 1, 2].map((i) => host(`far${i}`, { availability_zone: "az1" })),
    ];
    const { explanation } = filterAndWeigh(
      hosts,
      spec({ flavor: flavor({ memory_mb: 8192 }), availability_zone: "az2" }),
      {
        index: 0,
        config: config(),
      },
    );
    expect(summarizeNoValidHost(explanation, hosts.length)).toBe(
      "0/8 hosts are available: 5 lacked MEMORY_MB (needs 8192 MB, largest free 4096 MB), " +
        "3 are not in availability zone az2.",
    );
  });

  it("uses the singular for one host and keeps pipeline order on ties", () => {
    const hosts = [
      host("a", { service: { disabled: true } }),
      host("b", { service: { up: false } }),
      host("c", { resources: { VCPU: inventory(2, { used: 2 }) } }),
    ];
    const { explanation } = filterAndWeigh(hosts, spec(), { index: 0, config: config() });
    expect(summarizeNoValidHost(explanation, 3)).toBe(
      "0/3 hosts are available: 1 lacked VCPU (needs 1, largest free 0), 1 is disabled, 1 is down.",
    );
  });

  it("counts available hosts when the shortage is elsewhere (multi-create)", () => {
    const { explanation } = filterAndWeigh([host("a"), host("b", { service: { up: false } })], spec(), {
      index: 0,
      config: config(),
    });
    expect(summarizeNoValidHost(explanation, 2)).toBe("1/2 hosts are available: 1 is down.");
  });

  it("no hosts at all", () => {
    const { explanation } = filterAndWeigh([], spec(), { index: 0, config: config() });
    expect(summarizeNoValidHost(explanation, 0)).toBe("0/0 hosts are available.");
  });
});

describe("NoValidHost", () => {
  it("carries the operator detail in its message (all a Lambda error keeps) and is caught by name", () => {
    const err = new NoValidHost("0/1 hosts are available: 1 is down.");
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe("NoValidHost");
    expect(err.message).toBe("0/1 hosts are available: 1 is down.");
    expect(err.details).toBe(err.message);
    expect(NO_VALID_HOST_MESSAGE).toBe("No valid host was found. There are not enough hosts available.");
  });
});
