// When an agent's heartbeat goes out: news at once; with nothing new, only as often as keeping the
// Services record fresh needs, with one interval to spare before service_down_time.
import { describe, expect, it } from "vitest";
import { HeartbeatClock, heartbeatDue, idleHeartbeatSeconds } from "../../../lib/compute/heartbeat.js";

/** The ticks (1, 2, …) at which an idle agent sends, over `ticks` intervals. */
function sends(interval: number, downTime: number, ticks: number): number[] {
  const sent: number[] = [];
  let beats = 0;
  for (let t = 1; t <= ticks; t++) {
    beats++;
    if (heartbeatDue(beats, interval, downTime, false)) {
      sent.push(t);
      beats = 0;
    }
  }
  return sent;
}

describe("heartbeatDue", () => {
  it("sends news at every interval", () => {
    for (let beats = 1; beats <= 3; beats++) expect(heartbeatDue(beats, 40, 120, true)).toBe(true);
  });

  it("at the defaults (40 s, 120 s) an idle host reports every other interval: 80 s, 40 s to spare", () => {
    expect(sends(40, 120, 6)).toEqual([2, 4, 6]);
    expect(idleHeartbeatSeconds(40, 120)).toBe(80);
  });

  it("at Nova's agent default (10 s) against 120 s: every 60 s", () => {
    expect(idleHeartbeatSeconds(10, 120)).toBe(60);
  });

  it("never lets the record grow older than service_down_time less one interval", () => {
    for (const interval of [1, 2, 7, 10, 30, 40, 50, 59, 60, 90]) {
      for (const downTime of [3, 4, 6, 60, 120, 121, 300]) {
        if (interval >= downTime) continue;
        const period = idleHeartbeatSeconds(interval, downTime);
        expect(period, `${interval} s / ${downTime} s`).toBeLessThanOrEqual(
          Math.max(interval, downTime - interval),
        );
      }
    }
  });

  it("sends every interval when a skip could not leave one to spare (59 s against 120 s)", () => {
    expect(sends(59, 120, 4)).toEqual([1, 2, 3, 4]);
    expect(sends(1, 2, 3)).toEqual([1, 2, 3]);
  });

  it("a clock refuses a missing setting, which would silence every idle heartbeat", () => {
    expect(() => new HeartbeatClock(40, Number(undefined))).toThrow(
      "heartbeats need [DEFAULT] report_interval and service_down_time above 0 (got 40 and NaN)",
    );
    const clock = new HeartbeatClock(40, 120);
    expect([clock.due(false), clock.due(false)]).toEqual([false, true]);
    clock.sent();
    expect(clock.due(true)).toBe(true);
  });
});
