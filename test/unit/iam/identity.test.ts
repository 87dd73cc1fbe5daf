// Each component calls AWS with its own keys: one client per identity, the default chain without.
import { afterEach, describe, expect, it } from "vitest";
import { dynamo, resetClients, sqsClient } from "../../../lib/aws/clients.js";
import { perIdentity, runAs } from "../../../lib/aws/identity.js";
import {
  accessKeyIdOf,
  type Caller,
  COMPONENTS,
  identityOf,
  OPERATOR,
} from "../../../local/iam/identities.js";
import { hostNames } from "../../../local/runtime/hosts.js";

afterEach(() => resetClients());

describe("identities", () => {
  it("access key ids name the role, are distinct and keep access-key syntax", () => {
    const callers: Caller[] = [...COMPONENTS, OPERATOR];
    const keys = callers.map(accessKeyIdOf);
    expect(new Set(keys).size).toBe(keys.length);
    for (const k of keys) expect(k).toMatch(/^[A-Z0-9]{16,128}$/);
    expect(accessKeyIdOf("scheduler")).toMatch(/^LOCALSCHEDULER/);
  });

  it("a client per identity, signing with that identity's keys; without one, the default chain", async () => {
    const scheduler = identityOf("scheduler");
    const [a, b] = runAs(scheduler, () => [sqsClient(), sqsClient()]);
    expect(a).toBe(b);
    const api = runAs(identityOf("api"), () => sqsClient());
    expect(api).not.toBe(a);
    expect(sqsClient()).not.toBe(a);
    const creds = await runAs(scheduler, () => dynamo()).config.credentials();
    expect(creds.accessKeyId).toBe(scheduler.accessKeyId);
  });

  it("the identity follows async work started inside runAs", async () => {
    const seen = await runAs(identityOf("compute-host"), async () => {
      await new Promise((r) => setTimeout(r, 1));
      return sqsClient();
    });
    expect(seen).toBe(runAs(identityOf("compute-host"), () => sqsClient()));
  });

  it("per-identity state: what one component cached does not serve another", () => {
    const state = perIdentity(() => ({ hits: 0 }));
    runAs(identityOf("api"), () => state.get().hits++);
    expect(runAs(identityOf("api"), () => state.get().hits)).toBe(1);
    expect(runAs(identityOf("scheduler"), () => state.get().hits)).toBe(0);
    state.reset();
    expect(runAs(identityOf("api"), () => state.get().hits)).toBe(0);
  });
});

describe("hosts of a local runtime", () => {
  it("a count names host-1 … host-N; a list is taken as given", () => {
    expect(hostNames(3)).toEqual(["host-1", "host-2", "host-3"]);
    expect(hostNames(["compute-1.example.org", "compute-2.example.org"])).toEqual([
      "compute-1.example.org",
      "compute-2.example.org",
    ]);
    expect(() => hostNames(["a", "a"])).toThrow(/host a is listed twice/);
  });
});
