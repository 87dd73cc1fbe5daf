// os-simple-tenant-usage as Nova computes it (nova/api/openstack/compute/simple_tenant_usage.py):
// each instance that ran in [start, stop] is charged the hours it ran inside it, times its flavor's
// vcpus, memory_mb and local_gb (root + ephemeral); a project's summary adds them up.
import { terminatedAt } from "../../instances/soft-delete.js";
import type { InstanceRecord } from "../../instances/types.js";

/** Nova prints its naive UTC datetimes with microseconds: `2012-10-08T21:10:44.587336`. */
export function novaTime(d: Date): string {
  return `${d.toISOString().slice(0, 23)}000`;
}

/** The hours of [start, stop] an instance ran (Nova's _hours_for). */
export function hoursFor(rec: InstanceRecord, start: Date, stop: Date): number {
  const launched = rec.launched_at ? new Date(rec.launched_at) : undefined;
  const at = terminatedAt(rec);
  const terminated = at ? new Date(at) : undefined;
  if (terminated && terminated < start) return 0;
  if (!launched || launched > stop) return 0;
  const from = launched > start ? launched : start;
  const to = terminated && terminated < stop ? terminated : stop;
  return (to.getTime() - from.getTime()) / 3_600_000;
}

/**
 * Did it run in the period at all (Nova's get_active_by_window_joined)? An instance never
 * launched is not: Nova's `launched_at < end` is false for a NULL launched_at (tempest's schema
 * requires every listed server's started_at to be a date).
 */
export function activeIn(rec: InstanceRecord, start: Date, stop: Date): boolean {
  const at = terminatedAt(rec);
  if (at && new Date(at) < start) return false;
  return !!rec.launched_at && new Date(rec.launched_at) < stop;
}

export function serverUsage(
  rec: InstanceRecord,
  start: Date,
  stop: Date,
  now: Date,
): Record<string, unknown> {
  const started = rec.launched_at ? new Date(rec.launched_at) : undefined;
  // (a SOFT_DELETED server has not ended: Nova charges it until it is reclaimed)
  const at = terminatedAt(rec);
  const ended = at ? new Date(at) : undefined;
  const upTo = ended ?? now;
  return {
    hours: hoursFor(rec, start, stop),
    instance_id: rec.id,
    name: rec.name,
    tenant_id: rec.project_id,
    memory_mb: rec.flavor.memory_mb,
    local_gb: rec.flavor.root_gb + rec.flavor.ephemeral_gb,
    vcpus: rec.flavor.vcpus,
    flavor: rec.flavor.name,
    started_at: started ? novaTime(started) : null,
    ended_at: ended ? novaTime(ended) : null,
    state: ended ? "terminated" : rec.vm_state,
    uptime: started ? Math.floor((upTo.getTime() - started.getTime()) / 1000) : 0,
  };
}

interface Summary {
  tenant_id: string;
  server_usages?: Record<string, unknown>[];
  total_local_gb_usage: number;
  total_vcpus_usage: number;
  total_memory_mb_usage: number;
  total_hours: number;
  start: string;
  stop: string;
}

/** One summary per project, in the order their first instance comes. */
export function tenantUsages(
  recs: InstanceRecord[],
  period: { start: Date; stop: Date; now: Date; detailed: boolean },
): Summary[] {
  const out = new Map<string, Summary>();
  for (const rec of recs) {
    const info = serverUsage(rec, period.start, period.stop, period.now);
    let s = out.get(rec.project_id);
    if (!s) {
      s = {
        tenant_id: rec.project_id,
        ...(period.detailed ? { server_usages: [] } : {}),
        total_local_gb_usage: 0,
        total_vcpus_usage: 0,
        total_memory_mb_usage: 0,
        total_hours: 0,
        start: novaTime(period.start),
        stop: novaTime(period.stop),
      };
      out.set(rec.project_id, s);
    }
    const hours = info.hours as number;
    s.total_local_gb_usage += (info.local_gb as number) * hours;
    s.total_vcpus_usage += rec.flavor.vcpus * hours;
    s.total_memory_mb_usage += rec.flavor.memory_mb * hours;
    s.total_hours += hours;
    s.server_usages?.push(info);
  }
  return [...out.values()];
}
