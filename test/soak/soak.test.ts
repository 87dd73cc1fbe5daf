// Two minutes of random load and faults with a fixed seed: nothing stuck, overcommitted or leaked.
import { expect, it } from "vitest";
import { mustBeZero, printReport, runSoak } from "./soak.js";

it("survives 2 minutes of creates, deletes, dead hosts, duplicate and delayed messages, failing schedulers", async () => {
  const report = await runSoak({ minutes: 2, seed: 20261121, settleSeconds: 120 });
  process.stdout.write(`${printReport(report)}\n`);
  expect(report.requests).toBeGreaterThan(100);
  expect(report.host_kills).toBeGreaterThan(0);
  expect(report.active).toBeGreaterThan(0);
  expect(mustBeZero(report), printReport(report)).toEqual([]);
  expect(report.problems, printReport(report)).toEqual([]);
}, 360_000);
