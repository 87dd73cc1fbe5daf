// The exec driver's get_instance_diagnostics: a guest's process group as the kernel counts it.
import { readFileSync } from "node:fs";
import type { InstanceDiagnostics } from "../../messages/reports.js";
import { type CgroupSupport, groupStats } from "./cgroups.js";
import { type GuestSpec, POWER_STATE, type PowerState } from "./driver.js";
import { alive, procPids, statFields } from "./exec-proc.js";

/** The kernel's clock ticks a second in /proc (USER_HZ: 100 on every Linux architecture Node runs on). */
const USER_HZ = 100;

function systemUptime(): number {
  try {
    return Number(readFileSync("/proc/uptime", "utf8").split(" ")[0]);
  } catch {
    return 0;
  }
}

interface ProcFigures {
  pid: number;
  /** user and system time, its own and its reaped children's, in USER_HZ ticks */
  ticks: number;
  startTicks: number;
  rssKb: number;
  io?: Record<string, number>;
}

/** The processes of group `pgid`, with what /proc says of each (gone ones are skipped). */
function processGroup(pgid: number): ProcFigures[] {
  const out: ProcFigures[] = [];
  for (const p of procPids()) {
    try {
      const f = statFields(p);
      if (!f || Number(f[2]) !== pgid) continue;
      const status = readFileSync(`/proc/${p}/status`, "utf8");
      let io: Record<string, number> | undefined;
      try {
        io = Object.fromEntries(
          readFileSync(`/proc/${p}/io`, "utf8")
            .trim()
            .split("\n")
            .map((l) => l.split(": "))
            .map(([k, v]) => [k!, Number(v)]),
        );
      } catch {
        io = undefined;
      }
      out.push({
        pid: Number(p),
        ticks: Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]),
        startTicks: Number(f[19]),
        rssKb: Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0),
        io,
      });
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/** What the figures are read for: the guest's process group, its state and its flavor. */
export interface DiagnosedGuest {
  pid?: number;
  started?: string;
  power: PowerState;
  spec?: GuestSpec;
}

/**
 * The guest's process group as the kernel counts it: its cgroup's memory and CPU time where
 * limits are enforced, else the sum over its processes of /proc's resident memory and CPU
 * ticks; its I/O from /proc/<pid>/io. One CPU entry (the group's time: a process has no vCPUs
 * to tell apart), one disk entry (everything the group read and wrote), no NIC (guests share
 * the host's network).
 */
export function execDiagnostics(
  instanceUuid: string,
  g: DiagnosedGuest,
  cgroups: CgroupSupport,
): InstanceDiagnostics {
  const running = g.power === POWER_STATE.RUNNING && alive(g.pid, g.started);
  const procs = running && g.pid ? processGroup(g.pid) : [];
  const sum = procs.reduce(
    (a, p) => ({
      ticks: a.ticks + p.ticks,
      rssKb: a.rssKb + p.rssKb,
      readBytes: a.readBytes + (p.io?.read_bytes ?? 0),
      writeBytes: a.writeBytes + (p.io?.write_bytes ?? 0),
      reads: a.reads + (p.io?.syscr ?? 0),
      writes: a.writes + (p.io?.syscw ?? 0),
      io: a.io || p.io !== undefined,
    }),
    { ticks: 0, rssKb: 0, readBytes: 0, writeBytes: 0, reads: 0, writes: 0, io: false },
  );
  const cg = cgroups.enforced ? groupStats(cgroups.root, instanceUuid) : {};
  const leader = procs.find((p) => p.pid === g.pid);
  const MiB = 1024 * 1024;
  return {
    state: running ? "running" : "shutdown",
    driver: "exec",
    hypervisor: "exec",
    hypervisor_os: process.platform,
    uptime: leader ? Math.max(0, Math.floor(systemUptime() - leader.startTicks / USER_HZ)) : null,
    config_drive: g.spec?.config_drive ?? false,
    memory_details: {
      maximum:
        cg.memoryMax !== undefined ? Math.floor(cg.memoryMax / MiB) : (g.spec?.flavor.memory_mb ?? null),
      used: Math.floor((cg.memoryCurrent ?? sum.rssKb * 1024) / MiB),
    },
    cpu_details: [
      {
        id: null,
        time: cg.cpuUsageUsec !== undefined ? cg.cpuUsageUsec * 1000 : sum.ticks * (1e9 / USER_HZ),
        utilisation: null,
      },
    ],
    nic_details: [],
    disk_details: sum.io
      ? [
          {
            read_bytes: sum.readBytes,
            read_requests: sum.reads,
            write_bytes: sum.writeBytes,
            write_requests: sum.writes,
            errors_count: null,
          },
        ]
      : [],
  };
}
