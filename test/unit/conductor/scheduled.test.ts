import { describe, expect, it } from "vitest";
import { destinationIn, scheduledOf } from "../../../lib/conductor/scheduled.js";

const at = (host: string, availability_zone = "az1") => ({
  host,
  nodename: `${host}-node`,
  availability_zone,
});

describe("scheduledOf", () => {
  it("names each host once however many instances go there, and gives every destination back", () => {
    const s = scheduledOf([
      { instance_uuid: "a", selected: at("h1"), alternates: [at("h2"), at("h3", "az2")] },
      { instance_uuid: "b", selected: at("h2"), alternates: [at("h1")] },
    ]);
    expect(s.selections).toEqual([
      { instance_uuid: "a", host: "h1", alternates: ["h2", "h3"] },
      { instance_uuid: "b", host: "h2", alternates: ["h1"] },
    ]);
    expect(Object.keys(s.destinations).sort()).toEqual(["h1", "h2", "h3"]);
    expect(destinationIn(s, "h3")).toEqual(at("h3", "az2"));
    expect(() => destinationIn(s, "h9")).toThrow(/host h9 is selected but has no destination/);
  });
});
