// The report path's rule: a dead host is judged as before, an outage of the path is not a dead
// fleet, and after it a host's silence counts from when the path recovered.
import { describe, expect, it } from "vitest";
import { idleHeartbeatSeconds } from "../../../lib/compute/heartbeat.js";
import {
  deadlinePassed,
  effectiveHeartbeat,
  type HeardService,
  isHostAlive,
  judgeReportPath,
  quietAfterSeconds,
  type ReportPathHold,
  reportsWaiting,
} from "../../../lib/placement/report-path.js";

const T0 = Date.parse("2026-12-07T00:00:00.000Z");
const at = (s: number) => new Date(T0 + s * 1000).toISOString();
// the defaults: report_interval 40 s, service_down_time 120 s (an idle host reports every 80 s)
const SDT = 120;
const RI = 40;

function judge(services: HeardService[], now: number, hold?: ReportPathHold, suspectFraction = 0.55) {
  return judgeReportPath({
    services,
    hold,
    now: T0 + now * 1000,
    serviceDownTime: SDT,
    reportInterval: RI,
    suspectFraction,
  });
}

/** `n` hosts whose last heartbeats are spread evenly over the `spread` seconds before `last`. */
function fleet(n: number, last: number, spread = idleHeartbeatSeconds(RI, SDT)): HeardService[] {
  return Array.from({ length: n }, (_, k) => ({
    host: `h${k}`,
    last_heartbeat: at(last - (spread * k) / n),
  }));
}

describe("a sound path", () => {
  it("one dead host among live ones is silent and the path is not suspect", () => {
    const hosts = [...fleet(9, 1000), { host: "dead", last_heartbeat: at(1000 - 121) }];
    const v = judge(hosts, 1000);
    expect(v.suspect).toBe(false);
    expect(v.silent).toEqual(["dead"]);
    expect(v.changed).toBe(false);
    expect(isHostAlive(hosts.at(-1)!, v, SDT, T0 + 1000 * 1000)).toBe(false);
    expect(isHostAlive(hosts[0]!, v, SDT, T0 + 1000 * 1000)).toBe(true);
  });

  it("two hosts of a small fleet dying together are two deaths (Kubernetes' more than two)", () => {
    const hosts = [
      { host: "a", last_heartbeat: at(0) },
      { host: "b", last_heartbeat: at(0) },
      { host: "c", last_heartbeat: at(190) },
    ];
    const v = judge(hosts, 200);
    expect(v.suspect).toBe(false);
    expect(v.silent).toEqual(["a", "b"]);
  });

  it("hosts forced down or marked down earlier are not counted", () => {
    const hosts: HeardService[] = [
      ...fleet(2, 1000),
      { host: "f1", last_heartbeat: at(0), forced_down: true },
      { host: "f2", last_heartbeat: at(0), forced_down: true },
      { host: "m1", last_heartbeat: at(0), down_since: at(200) },
      { host: "m2", last_heartbeat: at(0), down_since: at(200) },
      { host: "new-dead", last_heartbeat: at(800) },
    ];
    const v = judge(hosts, 1000);
    expect(v.counted).toBe(3);
    expect(v.suspect).toBe(false);
    expect(v.silent).toEqual(["new-dead"]);
    // a host marked down while the path was sound stays down
    expect(isHostAlive(hosts[4]!, v, SDT, T0 + 1000 * 1000)).toBe(false);
  });

  it("nothing silent: no hold, however quiet a small idle fleet is", () => {
    const v = judge([{ host: "only", last_heartbeat: at(0) }], 100);
    expect(v.suspect).toBe(false);
    expect(v.silent).toEqual([]);
    expect(v.hold).toBeUndefined();
  });
});

describe("an outage of the path", () => {
  it("is caught from its first silent host on: every sweep through it holds and none marks a host", () => {
    // the path stops at 1000; the hosts' last beats spread over one idle cadence before it
    const hosts = fleet(1000, 1000);
    let hold: ReportPathHold | undefined;
    let firstHeld: number | undefined;
    for (let t = 1000; t <= 1600; t += 1) {
      const v = judge(hosts, t, hold);
      if (v.silent.length) expect(v.suspect, `at ${t - 1000}s into the outage`).not.toBe(false);
      if (v.suspect && firstHeld === undefined) firstHeld = t;
      hold = v.hold;
    }
    expect(firstHeld).toBeDefined();
    // dated from the last report the path carried, not from the sweep that first saw it quiet
    expect(firstHeld).toBeGreaterThan(1000);
    expect(hold).toEqual({ since: at(1000) });
  });

  it("holds whatever the fraction when no host is heard at all (Kubernetes' full disruption)", () => {
    const hosts = fleet(4, 1000, 10);
    const v = judge(hosts, 1000 + SDT + 5, undefined, 1);
    expect(v.suspect).toBe("path_quiet");
    expect(v.silent).toHaveLength(4);
    expect(
      v.silent.every((h) => isHostAlive({ host: h, last_heartbeat: at(1000) }, v, SDT, T0 + 1125_000)),
    ).toBe(true);
  });

  it("a storm some reports get through: more than the fraction silent holds, less does not", () => {
    const live = fleet(4, 1000);
    const silent = (n: number) =>
      Array.from({ length: n }, (_, k) => ({ host: `s${k}`, last_heartbeat: at(800) }));
    const many = judge([...live, ...silent(6)], 1000);
    expect(many.suspect).toBe("most_silent");
    expect(many.hold).toEqual({ since: at(1000) });
    expect(many.changed).toBe(true);
    const few = judge([...live, ...silent(4)], 1000);
    expect(few.suspect).toBe(false);
    expect(few.silent).toHaveLength(4);
    // the option turns the fraction rule off at 1
    expect(judge([...live, ...silent(6)], 1000, undefined, 1).suspect).toBe(false);
  });

  it("a hold already recorded is kept, not rewritten", () => {
    const hold = { since: at(1050) };
    const v = judge(fleet(10, 1000), 1300, hold);
    expect(v.suspect).toBe("path_quiet");
    expect(v.hold).toBe(hold);
    expect(v.changed).toBe(false);
    expect(v.reportsDelayed).toBe(true);
  });
});

describe("after the path recovers", () => {
  it("the hold ends, and a straggler's silence counts from the recovery, for service_down_time", () => {
    const hold = { since: at(1050) };
    // most hosts are back at 1400; one straggler's last beat is from before the outage
    const hosts = [...fleet(9, 1400, 20), { host: "straggler", last_heartbeat: at(990) }];
    const v = judge(hosts, 1410, hold);
    expect(v.suspect).toBe(false);
    expect(v.hold).toEqual({ since: at(1050), recovered_at: at(1410) });
    expect(v.changed).toBe(true);
    expect(v.silent).toEqual([]);
    expect(v.reportsDelayed).toBe(true);
    expect(effectiveHeartbeat(hosts.at(-1)!, v.hold)).toBe(at(1410));
    // within service_down_time of the recovery: alive; past it, silent and not suspect
    const later = judge(hosts, 1410 + SDT, v.hold);
    expect(later.silent).toEqual([]);
    expect(isHostAlive(hosts.at(-1)!, later, SDT, T0 + (1410 + SDT) * 1000)).toBe(true);
    const fleetNow = [...fleet(9, 1410 + SDT + 1, 20), hosts.at(-1)!];
    const dead = judge(fleetNow, 1410 + SDT + 1, v.hold);
    expect(dead.suspect).toBe(false);
    expect(dead.silent).toEqual(["straggler"]);
    expect(dead.reportsDelayed).toBe(false);
    expect(isHostAlive(hosts.at(-1)!, dead, SDT, T0 + (1410 + SDT + 1) * 1000)).toBe(false);
  });

  it("a host heard after the recovery is judged by its own heartbeat", () => {
    const hold = { since: at(0), recovered_at: at(100) };
    expect(effectiveHeartbeat({ last_heartbeat: at(150) }, hold)).toBe(at(150));
    expect(effectiveHeartbeat({ last_heartbeat: at(50) }, undefined)).toBe(at(50));
  });
});

describe("a build's deadline", () => {
  const sound = { reportsDelayed: false, hold: undefined };
  it("passes as before while the path is sound", () => {
    expect(deadlinePassed(at(100), sound, T0 + 101_000)).toBe(true);
    expect(deadlinePassed(at(100), sound, T0 + 100_000)).toBe(false);
    expect(deadlinePassed(undefined, sound, T0 + 101_000)).toBe(false);
  });

  it("does not pass while reports are delayed, and the hold's length does not count after", () => {
    expect(deadlinePassed(at(100), { reportsDelayed: true, hold: { since: at(50) } }, T0 + 1000_000)).toBe(
      false,
    );
    // held from 50 to 350: a deadline at 100 now falls at 400
    const after = { reportsDelayed: false, hold: { since: at(50), recovered_at: at(350) } };
    expect(deadlinePassed(at(100), after, T0 + 399_000)).toBe(false);
    expect(deadlinePassed(at(100), after, T0 + 401_000)).toBe(true);
    // a deadline that had passed before the hold began is not pushed back
    expect(deadlinePassed(at(40), after, T0 + 41_000)).toBe(true);
  });

  it("counts the whole outage lost, from the last report the path carried, not from its first suspect sweep", () => {
    // the path stops at 1000 and a sweep finds it quiet some time later; it recovers at 1300
    const hosts = fleet(10, 1000);
    let hold: ReportPathHold | undefined;
    for (let t = 1000; !hold; t += 1) hold = judge(hosts, t, hold).hold;
    const recovered = judge(fleet(10, 1300, 1), 1300, hold).hold!;
    expect(recovered).toEqual({ since: at(1000), recovered_at: at(1300) });
    // a deadline at 1010, while no report could get through, falls 300 s later
    const after = { reportsDelayed: false, hold: recovered };
    expect(deadlinePassed(at(1010), after, T0 + 1309_000)).toBe(false);
    expect(deadlinePassed(at(1010), after, T0 + 1311_000)).toBe(true);
  });

  it("the verdict says reports are delayed while suspect and for service_down_time after", () => {
    const hold = { since: at(0), recovered_at: at(1000) };
    const hosts = fleet(10, 1000 + SDT);
    expect(judge(hosts, 1000 + SDT, hold).reportsDelayed).toBe(true);
    expect(judge(hosts, 1000 + SDT + 1, hold).reportsDelayed).toBe(false);
  });
});

describe("a host's reports still waiting", () => {
  it("while its last heartbeat said its spool held reports", () => {
    expect(reportsWaiting({ report_spool: { reports: 2 } })).toBe(true);
    expect(reportsWaiting({ report_spool: { reports: 0 } })).toBe(false);
    expect(reportsWaiting({})).toBe(false);
  });
});

describe("quietAfterSeconds", () => {
  it("is service_down_time less one idle cadence and half an interval, or the whole of it", () => {
    // 120 − 80 − 20
    expect(quietAfterSeconds(120, 40)).toBe(20);
    // Nova's 60 s and 10 s: 60 − 30 − 5
    expect(quietAfterSeconds(60, 10)).toBe(25);
    // a control plane whose interval is not its hosts' (40 s against 4 s): only a silent fleet
    expect(quietAfterSeconds(4, 40)).toBe(4);
  });
});
