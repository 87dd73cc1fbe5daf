// Which suites run where. The integration suites, and the end-to-end files whose outcome rests on
// the queues' and tables' own behaviour (deliveries, visibility, redrives, conditional writes,
// tags and SenderIds), run against a DynamoDB and an SQS in processes of their own (`npm run
// test:external`), the path LocalStack takes; `npm test` runs them there only, and every other
// file once, in process (the suite's 15-minute budget on 2 cores). A plain `vitest run` runs
// everything in process.

/** what `npm run test:external` runs when named no files */
export const EXTERNAL_SUITES = [
  "test/integration",
  ...[
    "walkthrough",
    "build-path",
    "reschedule",
    "faults-hosts",
    "faults-zombie",
    "faults-duplicates",
    "delete-while-spawning",
    "poison-messages",
    "dead-letters",
    "transient-errors",
    "long-poll",
    "agent-registration",
    "host-isolation",
    "lifecycle",
    // the conductor's other workflows and the server's life: fenced writes and casts throughout
    // (and run beside tempest, in the suite's last phase, where a core is free). Shelve,
    // snapshots, live migration and drain run in process: against LocalStack they took 214 s of
    // its phase's 300 (2026-12-07), which put the suite past its budget.
    "pause-suspend",
    "admin-actions",
    "evacuate",
  ].map((f) => `test/e2e/${f}.test.ts`),
];

/**
 * The files that run real QEMU guests (TCG: a core each while one boots). `npm test` runs them
 * first, on their own (`npm run test:qemu`): beside the rest of the suite, LocalStack and tempest,
 * a guest starved of CPU misses its deadlines, and so does its libvirtd's start.
 */
export const REAL_QEMU_SUITES = [
  "test/drivers/libvirt-qemu.test.ts",
  "test/e2e/libvirt-guests.test.ts",
  "test/image/guest-image.test.ts",
];

/** the checks of the embedded emulators themselves: they skip against external ones */
export const IN_PROCESS_ONLY = ["test/integration/emulators.test.ts"];

/**
 * What `NOVALESS_SUITES=in-process vitest run` (npm test's in-process run) leaves to the external
 * run: the external suites as globs, less the in-process-only files.
 */
export function leftToExternal(files: string[]): string[] {
  return EXTERNAL_SUITES.flatMap((s) =>
    s.endsWith(".test.ts") ? [s] : files.filter((f) => f.startsWith(`${s}/`) && f.endsWith(".test.ts")),
  ).filter((f) => !IN_PROCESS_ONLY.includes(f));
}
