// A host's inventory from the machine, as nova-compute's resource tracker reports it: its CPUs,
// its memory, the disk of the instances path, less what the configuration reserves for the host,
// with the configured allocation ratios.
import { mkdirSync, statfsSync } from "node:fs";
import { availableParallelism, totalmem } from "node:os";
import type { AgentConfig } from "./agent-config.js";
import type { HostSize } from "./inventory.js";

export interface MachineFacts {
  cpus: number;
  memoryBytes: number;
  /** the instances path's filesystem */
  diskBytes: number;
}

/** Pure: the machine's facts in the units Nova's resource tracker reports (vCPUs, MB, GB). */
export function machineSize(m: MachineFacts): Pick<HostSize, "vcpus" | "memory_mb" | "local_gb"> {
  return {
    vcpus: m.cpus,
    memory_mb: Math.floor(m.memoryBytes / 2 ** 20),
    local_gb: Math.floor(m.diskBytes / 2 ** 30),
  };
}

/** Pure: the machine's facts and the configuration → the size inventoriesFor takes. */
export function hostSizeOf(m: MachineFacts, c: AgentConfig): HostSize {
  const d = c.DEFAULT;
  const num = (v: unknown) => (v === undefined ? undefined : Number(v));
  return {
    ...machineSize(m),
    ...(d.cpu_allocation_ratio !== undefined ? { cpu_allocation_ratio: num(d.cpu_allocation_ratio) } : {}),
    ...(d.ram_allocation_ratio !== undefined ? { ram_allocation_ratio: num(d.ram_allocation_ratio) } : {}),
    ...(d.disk_allocation_ratio !== undefined ? { disk_allocation_ratio: num(d.disk_allocation_ratio) } : {}),
    reserved_host_memory_mb: num(d.reserved_host_memory_mb),
    reserved_host_cpus: num(d.reserved_host_cpus),
    reserved_host_disk_mb: num(d.reserved_host_disk_mb),
  };
}

/** This machine's facts; the instances path is created if it is not there yet. */
export function machineFacts(instancesPath: string): MachineFacts {
  mkdirSync(instancesPath, { recursive: true });
  const fs = statfsSync(instancesPath);
  return { cpus: availableParallelism(), memoryBytes: totalmem(), diskBytes: fs.blocks * fs.bsize };
}
