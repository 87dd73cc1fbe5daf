// The sweep's hold on the embedded DynamoDB: a fleet gone silent at once marks no host down, the
// hold is one item of the Services table that no listing of services shows, and after the path
// recovers a host's silence counts from then.
import { describe, expect, it } from "vitest";
import { getHost } from "../../lib/placement/hosts.js";
import {
  getServiceHeartbeat,
  heartbeat,
  isServiceUp,
  listServiceHeartbeats,
  REPORT_PATH_KEY,
  sweepLiveness,
} from "../../lib/placement/liveness.js";
import { registerTestHost } from "./hosts.js";
import { useLocalAws } from "./local-aws.js";

useLocalAws();

const SDT = 120;
const OPTS = { reportInterval: 40, suspectFraction: 0.55 };
const T0 = Date.parse("2026-12-07T00:00:00.000Z");
const at = (seconds: number) => new Date(T0 + seconds * 1000);
const HOSTS = ["h1", "h2", "h3", "h4", "h5"];

describe("the report path's hold", () => {
  it("holds through a silent fleet, ends when most are heard, then catches the one that stays silent", async () => {
    for (const host of HOSTS) {
      await registerTestHost(host);
      await heartbeat(host, at(0));
    }
    // The path stops at 0; sweeps run through 5 service_down_times of it (nothing to decide until
    // a host has been silent for service_down_time).
    for (let t = 60; t <= 600; t += 60) {
      const s = await sweepLiveness(SDT, at(t), OPTS);
      expect(s.markedDown, `at ${t}s`).toEqual([]);
      expect(s.reportPath.suspect, `at ${t}s`).toBe(t > SDT ? "path_quiet" : false);
    }
    for (const host of HOSTS) expect(isServiceUp((await getHost(host))!)).toBe(true);
    // the hold is no compute service
    expect((await listServiceHeartbeats()).map((s) => s.host).sort()).toEqual(HOSTS);
    // first found at 180, dated from the last report the path carried
    expect(await getServiceHeartbeat(REPORT_PATH_KEY)).toMatchObject({ since: at(0).toISOString() });

    // Back at 610: all but h5 report; the hold ends and h5 gets its grace from the recovery.
    for (const host of HOSTS.slice(0, 4)) await heartbeat(host, at(610));
    const back = await sweepLiveness(SDT, at(620), OPTS);
    expect(back.reportPath.suspect).toBe(false);
    expect(back.markedDown).toEqual([]);
    expect(await getServiceHeartbeat(REPORT_PATH_KEY)).toMatchObject({
      since: at(0).toISOString(),
      recovered_at: at(620).toISOString(),
    });
    for (const host of HOSTS.slice(0, 4)) await heartbeat(host, at(700));
    expect((await sweepLiveness(SDT, at(720), OPTS)).markedDown).toEqual([]);

    // service_down_time after the recovery h5 is still silent while the rest are heard: down.
    for (const host of HOSTS.slice(0, 4)) await heartbeat(host, at(740));
    const later = await sweepLiveness(SDT, at(745), OPTS);
    expect(later.reportPath.suspect).toBe(false);
    expect(later.markedDown).toEqual(["h5"]);
    expect(isServiceUp((await getHost("h5"))!)).toBe(false);
  });
});
