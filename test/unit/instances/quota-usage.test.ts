// What a server counts in its project's usage during a resize (usageOf, which a delete releases):
// the larger flavor until a revert or confirm begins, then the flavor that revert or confirm keeps,
// whichever flavor the record shows until its host answers.
import { describe, expect, it } from "vitest";
import { usageOf } from "../../../lib/instances/quota-release.js";
import type { MigrationStatus, MoveContext } from "../../../lib/instances/types.js";
import { record } from "../api/records.js";

const flavor = (id: string, vcpus: number, memory_mb: number) => ({
  id,
  name: `f${id}`,
  vcpus,
  memory_mb,
  root_gb: 1,
  ephemeral_gb: 0,
  swap: 0,
  extra_specs: {},
});
const small = flavor("2", 1, 2048);
const medium = flavor("3", 2, 4096);

function resizing(status: MigrationStatus, shows: "old" | "new", from = small, to = medium) {
  const migration = { uuid: "m", status, old_flavor: from, new_flavor: to } as MoveContext;
  return record({ flavor: shows === "old" ? from : to, migration, vm_state: "resized", task_state: null });
}

describe("a resizing server's usage", () => {
  it("counts the larger flavor while the move is unsettled", () => {
    expect(usageOf(resizing("pre-migrating", "old"))).toEqual({ instances: 1, cores: 2, ram: 4096 });
    expect(usageOf(resizing("finished", "new"))).toEqual({ instances: 1, cores: 2, ram: 4096 });
    // a resize down: the old, larger flavor until confirmed
    expect(usageOf(resizing("finished", "new", medium, small))).toEqual({
      instances: 1,
      cores: 2,
      ram: 4096,
    });
  });

  it("once a revert began (the difference given back), the old flavor, though the record still shows the new", () => {
    expect(usageOf(resizing("reverting", "new"))).toEqual({ instances: 1, cores: 1, ram: 2048 });
    expect(usageOf(resizing("reverting", "old"))).toEqual({ instances: 1, cores: 1, ram: 2048 });
  });

  it("once a confirm began, the new flavor (a resize down's old one given back)", () => {
    expect(usageOf(resizing("confirming", "new", medium, small))).toEqual({
      instances: 1,
      cores: 1,
      ram: 2048,
    });
    expect(usageOf(resizing("confirming", "new"))).toEqual({ instances: 1, cores: 2, ram: 4096 });
  });
});
