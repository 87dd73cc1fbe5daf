import { describe, expect, it } from "vitest";
import { maxRetriesFault, rescheduledText, withoutHosts } from "../../../lib/instances/faults.js";

const ID = "6f1c2d3e-0000-4000-8000-000000000001";

describe("withoutHosts", () => {
  it("replaces each host named, whole names only", () => {
    expect(withoutHosts("fake driver on host-1 is set to fail every build", ["host-1"])).toBe(
      "fake driver on the host is set to fail every build",
    );
    expect(withoutHosts("host-12 and host-1.example.org, not host-1", ["host-1"])).toBe(
      "host-12 and host-1.example.org, not the host",
    );
    expect(withoutHosts("spawn on compute-1.example.org failed.", ["compute-1.example.org"])).toBe(
      "spawn on the host failed.",
    );
  });

  it("prefers the longer name, and leaves text alone when there are no hosts", () => {
    expect(withoutHosts("a.b.c down", ["a.b", "a.b.c"])).toBe("the host down");
    expect(withoutHosts("nothing (here)", [])).toBe("nothing (here)");
    // a name is text, not a pattern
    expect(withoutHosts("x+y? on xxy?", ["x+y?"])).toBe("the host on xxy?");
  });
});

describe("maxRetriesFault", () => {
  it("Nova's text for the owner, the hosts tried for the admin", () => {
    const f = maxRetriesFault(ID, 3, rescheduledText(ID, "host-2 said no"), ["host-1", "host-2"]);
    expect(f.code).toBe(500);
    expect(f.message).toBe(
      `Exceeded maximum number of retries. Exceeded max scheduling attempts 3 for instance ${ID}. ` +
        `Last exception: Build of instance ${ID} was re-scheduled: the host said no`,
    );
    expect(f.message).not.toMatch(/host-\d/);
    expect(f.details).toMatch(/^hosts tried: host-1, host-2; /);
  });

  it("a v1 message's last fault, which began with the host, loses it too", () => {
    const f = maxRetriesFault(ID, 3, "host-7: image cannot be booted", ["host-7"]);
    expect(f.message).toMatch(/Last exception: the host: image cannot be booted$/);
  });
});
