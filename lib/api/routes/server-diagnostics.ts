// GET /servers/{id}/diagnostics (Nova's server_diagnostics.py): admin only. The server's host
// reads its driver's figures and answers through compute-events (host-answer.ts), as Nova's API
// calls its compute host. From 2.48 the answer is Nova's standard shape (views/
// server_diagnostics.py); before, the free-form dictionary each Nova driver made its own, here
// libvirt's keys (cpu0_time, vda_read, memory…) from the same figures.

import { readHostAnswer } from "../../instances/host-answers.js";
import type { InstanceRecord } from "../../instances/types.js";
import { powerStateName } from "../../messages/power-state.js";
import type { InstanceDiagnostics } from "../../messages/reports.js";
import { requireAdmin } from "../auth.js";
import { conflict } from "../errors.js";
import type { ApiResult, Route, RouteCall } from "../request.js";
import { askHost } from "./host-answer.js";
import { checkInstanceHost, instanceNotReady, invalidState } from "./instance-checks.js";
import { findServer } from "./servers.js";

/** Nova's policy rule (nova/policies/server_diagnostics.py): admin only. */
export const DIAGNOSTICS_RULE = "os_compute_api:os-server-diagnostics";

/** Nova's instance_diagnostics view: the counts are the lists' lengths (Nova's add_cpu and friends). */
export function diagnosticsView(d: InstanceDiagnostics, uptime: number | null): Record<string, unknown> {
  return {
    state: d.state,
    driver: d.driver,
    hypervisor: d.hypervisor,
    hypervisor_os: d.hypervisor_os,
    uptime: d.uptime ?? uptime,
    config_drive: d.config_drive,
    num_cpus: d.cpu_details.length,
    num_nics: d.nic_details.length,
    num_disks: d.disk_details.length,
    memory_details: d.memory_details,
    cpu_details: d.cpu_details,
    nic_details: d.nic_details,
    disk_details: d.disk_details.map(({ device: _device, ...figures }) => figures),
  };
}

/**
 * Before 2.48 each Nova driver answered its own dictionary; libvirt's (get_diagnostics):
 * cpu<n>_time, <disk>_read_req/_read/_write_req/_write/_errors, <nic>_rx/_rx_packets/…, memory
 * (KiB) and memory-actual. Figures the driver does not have are left out.
 */
export function legacyDiagnosticsView(d: InstanceDiagnostics): Record<string, number> {
  const out: Record<string, number> = {};
  const put = (k: string, v: number | null) => {
    if (v !== null) out[k] = v;
  };
  d.cpu_details.forEach((c, i) => {
    put(`cpu${c.id ?? i}_time`, c.time);
  });
  d.disk_details.forEach((b, i) => {
    const dev = b.device ?? `disk${i}`;
    put(`${dev}_read_req`, b.read_requests);
    put(`${dev}_read`, b.read_bytes);
    put(`${dev}_write_req`, b.write_requests);
    put(`${dev}_write`, b.write_bytes);
    put(`${dev}_errors`, b.errors_count);
  });
  d.nic_details.forEach((n, i) => {
    const dev = `nic${i}`;
    put(`${dev}_rx`, n.rx_octets);
    put(`${dev}_rx_packets`, n.rx_packets);
    put(`${dev}_rx_errors`, n.rx_errors);
    put(`${dev}_rx_drop`, n.rx_drop);
    put(`${dev}_tx`, n.tx_octets);
    put(`${dev}_tx_packets`, n.tx_packets);
    put(`${dev}_tx_errors`, n.tx_errors);
    put(`${dev}_tx_drop`, n.tx_drop);
  });
  const { maximum, used } = d.memory_details;
  put("memory", maximum === null ? null : maximum * 1024);
  put("memory-actual", used === null ? null : used * 1024);
  return out;
}

/** Nova's libvirt counts uptime from the instance's launched_at; a driver without a clock of its own gets it here. */
function uptimeOf(rec: InstanceRecord, now: Date): number | null {
  return rec.launched_at
    ? Math.max(0, Math.floor((now.getTime() - Date.parse(rec.launched_at)) / 1000))
    : null;
}

async function showDiagnostics(call: RouteCall): Promise<ApiResult> {
  const { ctx, deps } = call;
  ctx.logFields.instance_uuid = call.params.id;
  const rec = await findServer(deps, call.params.id!, ctx.auth);
  requireAdmin(ctx.auth, DIAGNOSTICS_RULE);
  const p = deps.power;
  if (!p) throw new Error("the API was built without its power-action dependencies");
  const host = await checkInstanceHost(deps, rec);
  const requestId = ctx.requestId;
  const answer = await askHost(
    p,
    host.queue_url,
    { version: 1, kind: "get_diagnostics", request_id: requestId, instance_uuid: rec.id, host: host.host },
    () => readHostAnswer("diagnostics", rec.id, requestId),
  );
  if (!answer) {
    throw instanceNotReady(
      rec.id,
      `its host did not send the diagnostics within ${p.consoleTimeoutMs / 1000} s`,
    );
  }
  const diagnostics = answer.diagnostics as InstanceDiagnostics | null;
  if (!diagnostics) {
    if (typeof answer.power_state === "number") {
      const state = powerStateName(answer.power_state);
      throw invalidState(rec.id, "get_diagnostics", "power state", state);
    }
    throw conflict(`Unable to get the diagnostics of instance ${rec.id}: ${String(answer.error)}`);
  }
  return {
    status: 200,
    body: ctx.version.atLeast("2.48")
      ? diagnosticsView(diagnostics, uptimeOf(rec, deps.now()))
      : legacyDiagnosticsView(diagnostics),
  };
}

export const serverDiagnosticsRoutes: Route[] = [
  { method: "GET", pattern: "/servers/:id/diagnostics", handler: showDiagnostics },
];
