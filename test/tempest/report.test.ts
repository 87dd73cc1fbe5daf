import { describe, expect, it } from "vitest";
import { END, START, type TestResult, tally, updateDoc } from "./report.js";

const results: TestResult[] = [
  {
    id: "tempest.api.compute.flavors.test_flavors.FlavorsV2TestJSON.test_list_flavors",
    status: "success",
    reason: "",
  },
  {
    id: "tempest.api.compute.limits.test_absolute_limits.AbsoluteLimitsTestJSON.test_absLimits_get",
    status: "fail",
    reason:
      "Traceback (most recent call last):\n  File x\ntempest.lib.exceptions.NotFound: Object not found | 404",
  },
  {
    id: "tempest.api.compute.servers.test_servers.ServersTestJSON.test_x",
    status: "skip",
    reason: "resize is not available.",
  },
];

describe("the tempest results section", () => {
  it("counts passed, failed and skipped", () => {
    expect(tally(results)).toEqual({ passed: 1, failed: 1, skipped: 1 });
  });

  it("replaces only what lies between the markers, with each failure's last error line", () => {
    const doc = `# Title\n\nbefore\n${START}\nold results\n${END}\nafter\n`;
    const out = updateDoc(doc, results);
    expect(out.startsWith("# Title\n\nbefore\n")).toBe(true);
    expect(out.endsWith(`${END}\nafter\n`)).toBe(true);
    expect(out).not.toContain("old results");
    expect(out).toContain("**1 passed, 1 failed, 1 skipped**.");
    expect(out).toContain(
      "| `tempest.api.compute.limits.test_absolute_limits.AbsoluteLimitsTestJSON.test_absLimits_get` | tempest.lib.exceptions.NotFound: Object not found \\| 404 |",
    );
    expect(out).toContain("| resize is not available. |");
  });

  it("lists rows by test id, whatever order the workers reported them in", () => {
    const skip = (id: string): TestResult => ({ id, status: "skip", reason: "r" });
    const doc = `${START}\n${END}\n`;
    const a = updateDoc(doc, [skip("t.b"), skip("setUpClass (t.c)"), skip("t.a")]);
    expect(a).toBe(updateDoc(doc, [skip("t.a"), skip("t.b"), skip("setUpClass (t.c)")]));
    expect(a.indexOf("`setUpClass (t.c)`")).toBeLessThan(a.indexOf("`t.a`"));
    expect(a.indexOf("`t.a`")).toBeLessThan(a.indexOf("`t.b`"));
  });

  it("refuses a doc without the section", () => {
    expect(() => updateDoc("# no markers\n", results)).toThrow(/tempest-results/);
  });
});
