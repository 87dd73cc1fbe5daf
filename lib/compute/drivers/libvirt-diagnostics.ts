// A libvirt domain's diagnostics (Nova's LibvirtDriver.get_instance_diagnostics) from
// `virsh domstats`: state, balloon (memory, KiB), vcpu.<n>.time (ns), net.<n>.* and block.<n>.*.
// A hypervisor that leaves a group out (the test driver, test:///default, reports the state only)
// is read with the calls Nova itself makes: dominfo (virDomainGetInfo), vcpuinfo, domblkstat,
// domiflist. What neither gives is null, as in Nova.
import type { InstanceDiagnostics } from "../../messages/reports.js";

type Run = (command: string) => Promise<string>;

/** `virsh domstats` lines `  key=value` as a map. */
function parseDomstats(out: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const line of out.split("\n")) {
    const at = line.indexOf("=");
    if (at > 0) m.set(line.slice(0, at).trim(), line.slice(at + 1).trim());
  }
  return m;
}

/** `virsh dominfo`-like `Key:   value` lines. */
function parseColonList(out: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const line of out.split("\n")) {
    const at = line.indexOf(":");
    if (at > 0) m.set(line.slice(0, at).trim(), line.slice(at + 1).trim());
  }
  return m;
}

/**
 * The rows of a virsh table (domblklist, domiflist): its header, where there is one, is the line
 * above the rule (`virsh -q`, as the driver's connection runs, prints neither).
 */
function tableRows(out: string): string[][] {
  const lines = out
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
  const rule = lines.findIndex((l) => /^-+$/.test(l));
  return lines.slice(rule + 1).map((l) => l.split(/\s+/));
}

const STATE_NAMES: Record<string, InstanceDiagnostics["state"]> = {
  "0": "pending",
  "1": "running",
  "2": "running",
  "3": "paused",
  "4": "shutdown",
  "5": "shutdown",
  "6": "crashed",
  "7": "suspended",
};

const int = (v: string | undefined): number | null => {
  if (v === undefined || v === "") return null;
  const n = Number(v);
  return Number.isFinite(n) ? Math.round(n) : null;
};

const MiB_IN_KiB = 1024;

export async function domainDiagnostics(
  run: Run,
  name: string,
  /** Nova's [libvirt] virt_type (kvm, qemu, test), and whether the domain has a config drive */
  opts: { virtType: string; configDrive: boolean },
): Promise<InstanceDiagnostics> {
  const s = parseDomstats(await run(`domstats ${name}`));
  const info = parseColonList(await run(`dominfo ${name}`));
  const kib = (v: string | undefined) => {
    const n = int(v?.replace(/\s*KiB$/, ""));
    return n === null ? null : Math.floor(n / MiB_IN_KiB);
  };

  const cpus: InstanceDiagnostics["cpu_details"] = [];
  const vcpus = int(s.get("vcpu.current"));
  if (vcpus !== null) {
    for (let i = 0; i < vcpus; i++)
      cpus.push({ id: i, time: int(s.get(`vcpu.${i}.time`)), utilisation: null });
  } else {
    // Nova's get_vcpus_info: `virsh vcpuinfo`, CPU time in seconds
    let id: number | null = null;
    for (const [k, v] of (await run(`vcpuinfo ${name}`).catch(() => "")).split("\n").map((l) => {
      const at = l.indexOf(":");
      return [l.slice(0, at).trim(), l.slice(at + 1).trim()] as const;
    })) {
      if (k === "VCPU") id = int(v);
      if (k === "CPU time" && id !== null)
        cpus.push({ id, time: Math.round(Number.parseFloat(v) * 1e9), utilisation: null });
    }
  }

  const disks: InstanceDiagnostics["disk_details"] = [];
  const blocks = int(s.get("block.count"));
  if (blocks !== null) {
    for (let i = 0; i < blocks; i++) {
      disks.push({
        device: s.get(`block.${i}.name`),
        read_bytes: int(s.get(`block.${i}.rd.bytes`)),
        read_requests: int(s.get(`block.${i}.rd.reqs`)),
        write_bytes: int(s.get(`block.${i}.wr.bytes`)),
        write_requests: int(s.get(`block.${i}.wr.reqs`)),
        errors_count: int(s.get(`block.${i}.errors`)),
      });
    }
  } else {
    for (const [device] of tableRows(await run(`domblklist ${name}`).catch(() => ""))) {
      if (!device) continue;
      const st = new Map(
        (await run(`domblkstat ${name} ${device}`).catch(() => ""))
          .split("\n")
          .map((l) => l.trim().split(/\s+/))
          .filter((f) => f.length === 3)
          .map((f) => [f[1]!, f[2]!] as const),
      );
      disks.push({
        device,
        read_bytes: int(st.get("rd_bytes")),
        read_requests: int(st.get("rd_req")),
        write_bytes: int(st.get("wr_bytes")),
        write_requests: int(st.get("wr_req")),
        errors_count: int(st.get("errs")),
      });
    }
  }

  // MACs come from the domain's interfaces (domstats names them by device only)
  const macs = new Map(
    tableRows(await run(`domiflist ${name}`).catch(() => "")).map((r) => [r[0]!, r[4] ?? null] as const),
  );
  const nics: InstanceDiagnostics["nic_details"] = [];
  const nets = int(s.get("net.count"));
  const stat = (i: number, k: string) => int(s.get(`net.${i}.${k}`));
  if (nets !== null) {
    for (let i = 0; i < nets; i++) {
      nics.push({
        mac_address: macs.get(s.get(`net.${i}.name`) ?? "") ?? null,
        rx_octets: stat(i, "rx.bytes"),
        rx_errors: stat(i, "rx.errs"),
        rx_drop: stat(i, "rx.drop"),
        rx_packets: stat(i, "rx.pkts"),
        rx_rate: null,
        tx_octets: stat(i, "tx.bytes"),
        tx_errors: stat(i, "tx.errs"),
        tx_drop: stat(i, "tx.drop"),
        tx_packets: stat(i, "tx.pkts"),
        tx_rate: null,
      });
    }
  } else {
    // Nova adds a NIC it has no statistics for with its MAC only
    for (const mac of macs.values()) {
      nics.push({
        mac_address: mac,
        rx_octets: null,
        rx_errors: null,
        rx_drop: null,
        rx_packets: null,
        rx_rate: null,
        tx_octets: null,
        tx_errors: null,
        tx_drop: null,
        tx_packets: null,
        tx_rate: null,
      });
    }
  }

  return {
    state: STATE_NAMES[s.get("state.state") ?? ""] ?? "pending",
    driver: "libvirt",
    hypervisor: opts.virtType,
    hypervisor_os: "linux",
    // Nova counts it from the instance's launched_at, which the API has: it fills it in
    uptime: null,
    config_drive: opts.configDrive,
    memory_details: {
      maximum:
        int(s.get("balloon.maximum")) !== null
          ? Math.floor(int(s.get("balloon.maximum"))! / MiB_IN_KiB)
          : kib(info.get("Max memory")),
      used:
        int(s.get("balloon.current")) !== null
          ? Math.floor(int(s.get("balloon.current"))! / MiB_IN_KiB)
          : kib(info.get("Used memory")),
    },
    cpu_details: cpus,
    nic_details: nics,
    disk_details: disks,
  };
}
