// The longest files start first. On a clean checkout vitest has no durations cached and orders
// files by size, so a long file started last (the soak, about 50 s) kept the run going after
// the other workers had finished. These were the longest of the in-process run (2026-11-25).
import { BaseSequencer, type TestSpecification } from "vitest/node";

const LONGEST_FIRST = [
  // The soak first, beside the two files that mostly wait (an outage of 20 s, hosts'
  // heartbeats): its 40 s of load must get through every kind of move, and beside two files
  // that compute (three forks) it got too few steps in
  "test/soak/soak.test.ts",
  "test/e2e/report-outage.test.ts",
  "test/e2e/report-outage-exec.test.ts",
  "test/clients/openstack-cli.test.ts",
  "test/e2e/state-size.test.ts",
  "test/e2e/storm.test.ts",
  // real QEMU guests (TCG): a core while they boot, waiting otherwise
  "test/drivers/libvirt-qemu.test.ts",
  "test/e2e/libvirt-guests.test.ts",
  "test/image/guest-image.test.ts",
  "test/e2e/simulator.test.ts",
  "test/console/console.test.ts",
  "test/e2e/faults-deletes.test.ts",
  "test/infra/stack.test.ts",
  "test/e2e/quotas.test.ts",
  "test/e2e/scheduling.test.ts",
  "test/unit/scheduler/reference.test.ts",
];

const rank = (spec: TestSpecification): number => {
  const i = LONGEST_FIRST.findIndex((f) => spec.moduleId.endsWith(f));
  return i < 0 ? LONGEST_FIRST.length : i;
};

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    // a stable sort: the rest keep vitest's own order
    return sorted
      .map((spec, i) => ({ spec, i }))
      .sort((a, b) => rank(a.spec) - rank(b.spec) || a.i - b.i)
      .map((x) => x.spec);
  }
}
