// Instance HA, what OpenStack needs Masakari for: a host opted in (an aggregate with the metadata
// novaless:auto_evacuate=true) that stays down past service_down_time plus auto_evacuate_grace is
// fenced first (its compute service forced_down, so it cannot take work back without an
// operator), then its servers are evacuated, at most auto_evacuate_rate per watchdog run, each an
// `evacuate` instance action whose message names the dead host. Hosts not opted in are left to
// their operator, as before. Nothing is fenced or evacuated while the report path is suspect
// (lib/placement/report-path.ts), and a host's silence counts only from when the path recovered.
import { randomUUID } from "node:crypto";
import { sendBuildRequest } from "../aws/send.js";
import { listAggregates } from "../catalog/aggregates.js";
import { moveOptions } from "../config.js";
import { createMigration, nextMigrationId, updateMigration } from "../instances/migrations.js";
import { beginMove } from "../instances/move.js";
import { acceptMove } from "../instances/move-accept.js";
import { listInstancesOnHost } from "../instances/queries.js";
import { abandonAction } from "../instances/workflows.js";
import { log } from "../log.js";
import { metrics } from "../metrics.js";
import type { ServiceHeartbeat } from "../placement/liveness.js";
import { effectiveHeartbeat, type ReportPathVerdict } from "../placement/report-path.js";
import { setServiceStatus } from "../placement/services.js";
import { releaseUsage, reserveDelta } from "../quotas/store.js";

/** The aggregate metadata key that opts its hosts in. */
export const AUTO_EVACUATE_KEY = "novaless:auto_evacuate";

export interface AutoEvacuation {
  host: string;
  fenced: boolean;
  evacuated: string[];
}

/** The opted-in hosts (an aggregate says novaless:auto_evacuate=true, case-insensitive). */
async function optedIn(): Promise<Set<string>> {
  const hosts = new Set<string>();
  // fresh: once a minute, and an operator who just opted a host in expects it to count
  for (const a of await listAggregates({ fresh: true })) {
    if (String(a.metadata[AUTO_EVACUATE_KEY] ?? "").toLowerCase() === "true")
      for (const h of a.hosts) hosts.add(h);
  }
  return hosts;
}

export async function autoEvacuate(
  services: readonly ServiceHeartbeat[],
  serviceDownTime: number,
  now: Date,
  reportPath: Pick<ReportPathVerdict, "suspect" | "hold">,
): Promise<AutoEvacuation[]> {
  if (reportPath.suspect) return [];
  const { autoEvacuateGrace, autoEvacuateRate } = moveOptions();
  const deadline = now.getTime() - (serviceDownTime + autoEvacuateGrace) * 1000;
  const dead = services.filter((s) => Date.parse(effectiveHeartbeat(s, reportPath.hold)) < deadline);
  if (!dead.length) return [];
  const opted = await optedIn();
  let budget = autoEvacuateRate;
  const out: AutoEvacuation[] = [];
  for (const s of dead) {
    if (!opted.has(s.host) || budget <= 0) continue;
    const entry: AutoEvacuation = { host: s.host, fenced: false, evacuated: [] };
    // Fence before anything moves: a host that comes back must not run what is rebuilt elsewhere.
    if (!s.forced_down) {
      await setServiceStatus(s.host, { forced_down: true });
      entry.fenced = true;
    }
    for (const rec of await listInstancesOnHost(s.host)) {
      if (budget <= 0) break;
      if (rec.deleted || rec.task_state !== null || rec.migration) continue;
      if (!["active", "stopped", "error"].includes(rec.vm_state)) continue;
      const r = await acceptMove(
        rec,
        {
          kind: "evacuation",
          newFlavor: rec.flavor,
          requestedHost: null,
          sameHostAllowed: false,
          powerOn: rec.vm_state !== "stopped",
          action: {
            action: "evacuate",
            request_id: `req-${randomUUID()}`,
            user_id: rec.user_id,
            project_id: rec.project_id,
            start_time: now.toISOString(),
            message: `automatic evacuation: host ${s.host} is down (fenced, forced_down)`,
            events: {},
          },
        },
        {
          nextMigrationId,
          createMigration,
          updateMigration,
          begin: beginMove,
          abandon: abandonAction,
          sendBuildRequest,
          reserveDelta,
          releaseUsage,
          now: () => now,
        },
      );
      if (r.ok) {
        entry.evacuated.push(rec.id);
        budget--;
      }
    }
    if (entry.fenced || entry.evacuated.length) {
      out.push(entry);
      log.warn("watchdog.auto_evacuated", { ...entry });
      if (entry.evacuated.length) metrics.autoEvacuations(entry.evacuated.length);
    }
  }
  return out;
}
