#!/usr/bin/env tsx
// `novaless-audit`: Nova's `nova-manage placement audit` for novaless. Reads the Hosts, Allocations
// and Instances tables the environment names (the stack outputs, or the local runtime's) and reports
// leaked allocations and usage that does not add up; `--repair` fixes them and prints each change.
import { parseArgs } from "node:util";
import { auditExitCode, auditPlacement, formatAuditReport } from "../lib/placement/audit.js";

const USAGE =
  "usage: novaless-audit [--repair] [--grace-seconds N] [--host NAME]... [--json]\n" +
  "  --repair          release leaked allocations and recompute usage, free and num_instances\n" +
  "                    (alias: --delete)\n" +
  "  --grace-seconds   claims of instances in BUILD younger than this are pending, not leaks\n" +
  "                    (default: NOVALESS_PLACEMENT_AUDIT_GRACE_SECONDS, else 300)\n" +
  "  --host            audit only this host (repeatable)\n" +
  "  --json            print the report as JSON\n" +
  "environment needed: NOVALESS_HOSTS_TABLE, NOVALESS_ALLOCATIONS_TABLE, NOVALESS_INSTANCES_TABLE (and\n" +
  "AWS credentials/region, or AWS_ENDPOINT_URL_DYNAMODB for a local DynamoDB)\n" +
  "exit codes: 0 nothing found, 3 found, 4 all found repaired, 1 error, 127 invalid input\n";

let values: {
  repair?: boolean;
  delete?: boolean;
  "grace-seconds"?: string;
  host?: string[];
  json?: boolean;
  help?: boolean;
};
try {
  ({ values } = parseArgs({
    options: {
      repair: { type: "boolean" },
      delete: { type: "boolean" },
      "grace-seconds": { type: "string" },
      host: { type: "string", multiple: true },
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  }));
} catch (e) {
  process.stderr.write(`${(e as Error).message}\n${USAGE}`);
  process.exit(127);
}
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const grace = values["grace-seconds"];
const missing = ["NOVALESS_HOSTS_TABLE", "NOVALESS_ALLOCATIONS_TABLE", "NOVALESS_INSTANCES_TABLE"].filter(
  (k) => !process.env[k],
);
if ((grace !== undefined && !/^[0-9]+$/.test(grace)) || missing.length) {
  process.stderr.write(
    `${missing.length ? `missing: ${missing.join(", ")}\n` : `--grace-seconds ${grace} is not a number of seconds\n`}${USAGE}`,
  );
  process.exit(127);
}

try {
  const report = await auditPlacement({
    repair: Boolean(values.repair || values.delete),
    ...(grace === undefined ? {} : { graceSeconds: Number(grace) }),
    ...(values.host?.length ? { hosts: values.host } : {}),
  });
  process.stdout.write(values.json ? `${JSON.stringify(report, null, 2)}\n` : formatAuditReport(report));
  process.exit(auditExitCode(report));
} catch (e) {
  process.stderr.write(`novaless-audit: ${(e as Error).stack ?? e}\n`);
  process.exit(1);
}
