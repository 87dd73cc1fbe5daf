import { describe, expect, it } from "vitest";
import { destinationAt, scheduledOf, selectionIn } from "../../../lib/messages/scheduled.js";

const at = (host: string, availability_zone = "az1", nodename = host) => ({
  host,
  nodename,
  availability_zone,
});

describe("scheduledOf", () => {
  it("lists each host once however many instances name it; selections refer to it by index", () => {
    const s = scheduledOf([
      { instance_uuid: "a", selected: at("h1"), alternates: [at("h2"), at("h3", "az2", "h3-node")] },
      { instance_uuid: "b", selected: at("h2"), alternates: [at("h1")] },
    ]);
    expect(s).toEqual({
      hosts: [
        { host: "h1", availability_zone: "az1" },
        { host: "h2", availability_zone: "az1" },
        { host: "h3", node: "h3-node", availability_zone: "az2" },
      ],
      selections: [
        { instance_uuid: "a", host: 0, alternates: [1, 2] },
        { instance_uuid: "b", host: 1, alternates: [0] },
      ],
    });
  });

  it("gives every destination back, the node named as its host when omitted", () => {
    const list = [
      { instance_uuid: "a", selected: at("h1"), alternates: [at("h2"), at("h3", "az2", "h3-node")] },
      { instance_uuid: "b", selected: at("h3", "az2", "h3-node"), alternates: [] },
    ];
    const s = scheduledOf(list);
    expect(s.selections.map((sel) => selectionIn(s, sel))).toEqual(list);
    expect(() => destinationAt(s, 3)).toThrow(/host #3 is selected but the scheduler's answer lists 3 hosts/);
  });

  it("does not grow with host-name length per instance: a long name is written once", () => {
    const long = (i: number) => `${"compute".padEnd(240, "x")}-${i}.example.org`;
    const list = Array.from({ length: 100 }, (_, i) => ({
      instance_uuid: `i-${i}`,
      selected: at(long(i % 4)),
      alternates: [at(long((i + 1) % 4)), at(long((i + 2) % 4))],
    }));
    const bytes = JSON.stringify(scheduledOf(list)).length;
    // 4 hosts of ~255 characters, then 100 short selections.
    expect(bytes).toBeLessThan(4 * 300 + 100 * 60);
  });
});
