// cgroup v2 limits for exec guests (memory.max, cpu.max from the flavor), where the host allows
// them: a cgroup2 filesystem at the root with the memory and cpu controllers, writable by the
// agent. Detection is a pure function of what the files say, so it is tested on fixture trees.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface CgroupSupport {
  enforced: boolean;
  /** why (not) — shown in os-hypervisors */
  why: string;
  root: string;
}

/** What /proc/self/mounts and the root's files say; `readFile` returns undefined when absent. */
export function detectCgroupV2(
  root: string,
  mounts: string,
  readFile: (path: string) => string | undefined,
): CgroupSupport {
  const mount = mounts
    .split("\n")
    .map((l) => l.split(" "))
    .find((f) => f[1] === root);
  if (!mount) return { enforced: false, why: `${root} is not mounted: flavor limits are not enforced`, root };
  if (mount[2] !== "cgroup2") {
    return {
      enforced: false,
      why: `${root} is ${mount[2]} (cgroup v1 or a tmpfs of per-controller mounts), not cgroup2: flavor limits are not enforced`,
      root,
    };
  }
  const controllers = (readFile(join(root, "cgroup.controllers")) ?? "").trim().split(/\s+/);
  const missing = ["memory", "cpu"].filter((c) => !controllers.includes(c));
  if (missing.length) {
    return {
      enforced: false,
      why: `cgroup2 at ${root} has no ${missing.join(" or ")} controller: flavor limits are not enforced`,
      root,
    };
  }
  return { enforced: true, why: `cgroup v2 at ${root}: memory.max and cpu.max from the flavor`, root };
}

/** This machine's support, checked by creating (and removing) the agent's parent group. */
export function cgroupSupport(root = "/sys/fs/cgroup"): CgroupSupport {
  let mounts = "";
  try {
    mounts = readFileSync("/proc/self/mounts", "utf8");
  } catch {
    return { enforced: false, why: "no /proc/self/mounts: flavor limits are not enforced", root };
  }
  const found = detectCgroupV2(root, mounts, (p) => {
    try {
      return readFileSync(p, "utf8");
    } catch {
      return undefined;
    }
  });
  if (!found.enforced) return found;
  try {
    prepareParent(root);
    return found;
  } catch (e) {
    return { enforced: false, why: `cannot create ${join(root, PARENT)}: ${(e as Error).message}`, root };
  }
}

const PARENT = "novaless";

/** The agent's group, with memory and cpu enabled for its children. */
function prepareParent(root: string): void {
  const parent = join(root, PARENT);
  if (!existsSync(parent)) mkdirSync(parent);
  for (const at of [root, parent]) {
    const control = join(at, "cgroup.subtree_control");
    const enabled = existsSync(control) ? readFileSync(control, "utf8") : "";
    if (!/\bmemory\b/.test(enabled) || !/\bcpu\b/.test(enabled)) writeFileSync(control, "+memory +cpu");
  }
}

/** The files a guest's group gets from its flavor: memory in MiB, vCPUs as a CPU quota. */
export function limitFiles(memoryMb: number, vcpus: number): Record<string, string> {
  return {
    "memory.max": String(memoryMb * 1024 * 1024),
    "cpu.max": `${vcpus * 100_000} 100000`,
  };
}

/** Create the guest's group with its limits and move `pid` into it. */
export function confine(
  root: string,
  instanceUuid: string,
  pid: number,
  memoryMb: number,
  vcpus: number,
): string {
  const group = join(root, PARENT, instanceUuid);
  if (!existsSync(group)) mkdirSync(group, { recursive: true });
  for (const [file, value] of Object.entries(limitFiles(memoryMb, vcpus)))
    writeFileSync(join(group, file), value);
  writeFileSync(join(group, "cgroup.procs"), String(pid));
  return group;
}

/** Remove the guest's group (its processes are gone); a missing group is fine. */
export function release(root: string, instanceUuid: string): void {
  try {
    rmdirSync(join(root, PARENT, instanceUuid));
  } catch {
    // gone already, or never created (limits not enforced)
  }
}

/** A guest's group's own figures (cgroup v2): memory in bytes, CPU time in µs; absent when unreadable. */
export function groupStats(
  root: string,
  instanceUuid: string,
): { memoryCurrent?: number; memoryMax?: number; cpuUsageUsec?: number } {
  const read = (file: string): string | undefined => {
    try {
      return readFileSync(join(root, PARENT, instanceUuid, file), "utf8").trim();
    } catch {
      return undefined;
    }
  };
  const num = (t: string | undefined) => (t !== undefined && /^\d+$/.test(t) ? Number(t) : undefined);
  const usage = /^usage_usec (\d+)$/m.exec(read("cpu.stat") ?? "");
  return {
    memoryCurrent: num(read("memory.current")),
    // "max" when unlimited
    memoryMax: num(read("memory.max")),
    cpuUsageUsec: usage ? Number(usage[1]) : undefined,
  };
}
