// build-requests' two kinds: a build request (no `kind`) and a security group's member sync
// (security_groups_member_updated); a malformed sync is refused with its own schema's reason, so
// build-intake dead-letters it saying what is wrong with it.
import { describe, expect, it } from "vitest";
import { chunks } from "../../../lib/instances/security-group-refresh.js";
import { isMemberSync, parseBuildRequestsMessage } from "../../../lib/messages/security-group-sync.js";

const sync = {
  version: 1,
  kind: "security_groups_member_updated",
  request_id: "req-1",
  security_group_id: "8b1c2d3e-0000-4000-8000-000000000001",
  marked_at: 1_700_000_000_000,
};

describe("a message of build-requests", () => {
  it("a member sync is read as one", () => {
    const r = parseBuildRequestsMessage(JSON.stringify(sync));
    expect(r.ok).toBe(true);
    expect(r.ok && isMemberSync(r.value)).toBe(true);
  });

  it("a malformed member sync is refused with the sync's reason, not a build request's", () => {
    const { security_group_id: _g, ...noGroup } = sync;
    const r = parseBuildRequestsMessage(JSON.stringify(noGroup));
    expect(r).toMatchObject({ ok: false, reason: expect.stringMatching(/security_group_id/) });
    const unknown = parseBuildRequestsMessage(JSON.stringify({ ...sync, kind: "rm_rf" }));
    expect(unknown).toMatchObject({ ok: false, reason: expect.stringMatching(/kind/) });
    expect(parseBuildRequestsMessage(JSON.stringify({ ...sync, marked_at: -1 })).ok).toBe(false);
  });

  it("anything else is a build request, refused as one", () => {
    expect(parseBuildRequestsMessage("{oops")).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/not JSON/),
    });
    const r = parseBuildRequestsMessage(JSON.stringify({ version: 2 }));
    expect(r).toMatchObject({ ok: false, reason: expect.stringMatching(/request_id/) });
  });
});

describe("a host's refresh in casts SQS takes", () => {
  it("splits a host's servers into casts of at most the limit; one larger than it goes alone", () => {
    const items = ["a".repeat(40), "b".repeat(40), "c".repeat(200), "d".repeat(10)];
    expect(chunks(items, 100).map((p) => p.map((x) => x[0]))).toEqual([["a", "b"], ["c"], ["d"]]);
    expect(chunks([], 100)).toEqual([]);
  });
});
