// A tempest run's results (results.py's JSON) counted, and written into the results section of
// docs/openstack-clients.md (between its two markers) so the doc says what the last run found.

export interface TestResult {
  id: string;
  status: "success" | "fail" | "skip" | "xfail" | "uxsuccess";
  reason: string;
}

export const START = "<!-- tempest-results:start -->";
export const END = "<!-- tempest-results:end -->";

export function tally(results: TestResult[]): { passed: number; failed: number; skipped: number } {
  const count = (...s: TestResult["status"][]) => results.filter((r) => s.includes(r.status)).length;
  return { passed: count("success", "xfail"), failed: count("fail", "uxsuccess"), skipped: count("skip") };
}

/** One line of a reason, for a table cell. */
function oneLine(reason: string): string {
  const last = reason.trim().split("\n").at(-1) ?? "";
  return last.replaceAll("|", "\\|").slice(0, 300);
}

/** The doc with its results section replaced by this run's (no timings: a rerun with the same results leaves it as it was). */
export function updateDoc(doc: string, results: TestResult[]): string {
  const from = doc.indexOf(START);
  const to = doc.indexOf(END);
  if (from < 0 || to < from) throw new Error(`the doc has no ${START} … ${END} section`);
  const { passed, failed, skipped } = tally(results);
  // sorted by id: workers finish in any order, and the same results must print the same section
  const rows = (status: TestResult["status"]) =>
    results
      .filter((r) => r.status === status)
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map((r) => `| \`${r.id}\` | ${oneLine(r.reason)} |`)
      .join("\n");
  const section = [
    START,
    `Last run: **${passed} passed, ${failed} failed, ${skipped} skipped**.`,
    "",
    ...(failed > 0 ? ["Failing tests:", "", "| test | error |", "| --- | --- |", rows("fail"), ""] : []),
    ...(skipped > 0
      ? ["Skipped by tempest itself:", "", "| test | reason |", "| --- | --- |", rows("skip"), ""]
      : []),
    END,
  ].join("\n");
  return doc.slice(0, from) + section + doc.slice(to + END.length);
}
