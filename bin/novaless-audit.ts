#!/usr/bin/env tsx
// `novaless-audit`: Nova's `nova-manage placement audit` for novaless. Reads the Hosts, Allocations
// and Instances tables the environment names (the stack outputs, or the local runtime's) and reports
// leaked allocations and usage that does not add up; `--repair` fixes them and prints each change.
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { auditPlacement } from "../lib/placement/audit.js";
import type { AuditKind, AuditReport } from "../lib/placement/audit-classify.js";

const LABEL: Record<AuditKind, string> = {
  consumer_missing: "leak",
  consumer_deleted: "leak",
  consumer_error: "leak",
  consumer_elsewhere: "leak",
  pending: "pending",
  claim_missing: "missing",
  usage_mismatch: "mismatch",
  instances_mismatch: "mismatch",
  free_mismatch: "mismatch",
  units_mismatch: "mismatch",
  group_ledger_mismatch: "mismatch",
};

/** The report as the command prints it: one line per finding, what was changed after an arrow. */
export function formatAuditReport(r: AuditReport): string {
  const lines = [
    `${r.allocations_checked} allocation(s) on ${r.hosts_checked} host(s) checked (grace ${r.grace_seconds}s)`,
  ];
  for (const f of [...r.findings, ...r.pending]) {
    const what = f.consumer ? `consumer ${f.consumer}` : (f.resource_class ?? "inventories");
    const done = f.repaired ? `  → ${f.repaired}` : "";
    lines.push(`${LABEL[f.kind].padEnd(8)} ${f.host}  ${what}: ${f.detail}${done}`);
  }
  const repaired = r.findings.filter((f) => f.repaired).length;
  lines.push(
    r.findings.length === 0
      ? `no leaks or mismatches found${r.pending.length ? `; ${r.pending.length} pending` : ""}`
      : `${r.findings.length} leak(s)/mismatch(es) found${r.repair ? `, ${repaired} repaired` : "; run with --repair to fix them"}`,
  );
  return `${lines.join("\n")}\n`;
}

/**
 * nova-manage placement audit's return codes: 0 nothing found, 3 found (not all repaired),
 * 4 everything found was repaired.
 */
export function auditExitCode(r: AuditReport): number {
  if (r.findings.length === 0) return 0;
  return r.repair && r.findings.every((f) => f.repaired) ? 4 : 3;
}

const USAGE =
  "usage: novaless-audit [--repair] [--grace-seconds N] [--host NAME]... [--json]\n" +
  "  --repair          release leaked allocations and recompute usage, free and num_instances\n" +
  "                    (alias: --delete)\n" +
  "  --grace-seconds   claims of instances in BUILD younger than this are pending, not leaks\n" +
  "                    (default: NOVALESS_PLACEMENT_AUDIT_GRACE_SECONDS, else 300)\n" +
  "  --host            audit only this host (repeatable)\n" +
  "  --json            print the report as JSON\n" +
  "environment needed: NOVALESS_HOSTS_TABLE, NOVALESS_ALLOCATIONS_TABLE, NOVALESS_INSTANCES_TABLE,\n" +
  "NOVALESS_MIGRATIONS_TABLE, NOVALESS_CATALOG_TABLE (server groups' ledgers) (and\n" +
  "AWS credentials/region, or AWS_ENDPOINT_URL_DYNAMODB for a local DynamoDB)\n" +
  "exit codes: 0 nothing found, 3 found, 4 all found repaired, 1 error, 127 invalid input\n";

async function main(): Promise<void> {
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
}

// Run as the command, not when a test imports the report's format.
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
