// About a minute of random load and faults with a fixed seed (40 s of load, then settling): nothing
// stuck, overcommitted or leaked, with resizes, cold migrations, confirms, reverts, deletes
// mid-move, pauses, shelves and unshelves, soft deletes (restored, force-deleted or reclaimed) among
// the creates, deletes, dead hosts, outages of the report path and restarted agents. Longer runs: `npm run soak -- --minutes M`.
import { expect, it } from "vitest";
import { mustBeZero, printReport, runSoak } from "./soak.js";

it("survives 40 s of creates, deletes, moves, dead hosts, report outages, agent restarts, duplicate and delayed messages, failing schedulers", async () => {
  const started = Date.now();
  const report = await runSoak({
    minutes: 40 / 60,
    seed: 20261121,
    settleSeconds: 120,
    ...(process.env.SOAK_LOG ? { log: (l: string) => process.stderr.write(`${l}\n`) } : {}),
  });
  process.stdout.write(`${printReport(report)}\n  took ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
  expect(report.requests).toBeGreaterThan(30);
  expect(report.host_kills).toBeGreaterThan(0);
  expect(report.report_outages).toBeGreaterThan(0);
  expect(report.host_restarts).toBeGreaterThan(0);
  expect(report.active).toBeGreaterThan(0);
  // the moves ran: each kind accepted at least once, and some deleted mid-move or in VERIFY_RESIZE
  for (const kind of [
    "resize",
    "migrate",
    "confirmResize",
    "revertResize",
    "pause",
    "shelve",
    "unshelve",
    // soft delete (reclaim_instance_interval 5 s): some brought back, some deleted before their reclaim
    "restore",
    "forceDelete",
  ] as const)
    expect(report.moves[kind].accepted, `${kind}\n${printReport(report)}`).toBeGreaterThan(0);
  expect(report.deleted_moving + report.deleted_verify_resize).toBeGreaterThan(0);
  expect(report.soft_deleted_seen).toBeGreaterThan(0);
  expect(mustBeZero(report), printReport(report)).toEqual([]);
  expect(report.problems, printReport(report)).toEqual([]);
}, 360_000);
