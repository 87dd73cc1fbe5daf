// A host as Nova's HostState object looks to getattr(): what JsonFilter's `$name.key` and
// ComputeCapabilitiesFilter's `capabilities:name:key` can read, with Python's value types.
import type { HostState } from "./types.js";

const ATTRIBUTES: Readonly<Record<string, (h: HostState) => unknown>> = {
  host: (h) => h.host,
  nodename: (h) => h.nodename,
  hypervisor_hostname: (h) => h.nodename,
  free_ram_mb: (h) => h.free_ram_mb,
  free_disk_mb: (h) => h.free_disk_mb,
  total_usable_ram_mb: (h) => h.total_usable_ram_mb,
  total_usable_disk_gb: (h) => h.total_usable_disk_gb,
  disk_mb_used: (h) => h.disk_mb_used,
  vcpus_total: (h) => h.vcpus_total,
  vcpus_used: (h) => h.vcpus_used,
  num_instances: (h) => h.num_instances,
  num_io_ops: (h) => h.num_io_ops,
  failed_builds: (h) => h.failed_builds,
  hypervisor_type: (h) => h.hypervisor_type,
  hypervisor_version: (h) => h.hypervisor_version,
  host_ip: (h) => h.host_ip,
  supported_instances: (h) => h.supported_instances,
  cpu_allocation_ratio: (h) => h.cpu_allocation_ratio,
  ram_allocation_ratio: (h) => h.ram_allocation_ratio,
  disk_allocation_ratio: (h) => h.disk_allocation_ratio,
  stats: (h) => h.stats,
  metrics: (h) => h.metrics,
  aggregates: (h) => h.aggregates.map((a) => ({ id: a.id, name: a.name, metadata: a.metadata })),
  service: (h) => ({
    host: h.host,
    binary: "nova-compute",
    disabled: h.service.disabled,
    disabled_reason: h.service.disabled_reason,
    forced_down: h.service.forced_down,
  }),
};

/** Attributes Python holds as floats, so str() gives "16.0" for 16. */
const FLOATS = new Set(["cpu_allocation_ratio", "ram_allocation_ratio", "disk_allocation_ratio"]);

/** hasattr(host_state, name) */
export function hasHostAttribute(name: string): boolean {
  return Object.hasOwn(ATTRIBUTES, name);
}

/** getattr(host_state, name, None); undefined is None. */
export function hostAttribute(host: HostState, name: string): unknown {
  const get = Object.hasOwn(ATTRIBUTES, name) ? ATTRIBUTES[name] : undefined;
  const v = get?.(host);
  return v === null ? undefined : v;
}

/** hostAttribute(host, name) for one name, looked up once: for a query run over every host. */
export function hostAttributeOf(name: string): (host: HostState) => unknown {
  const get = Object.hasOwn(ATTRIBUTES, name) ? ATTRIBUTES[name] : undefined;
  return (host) => {
    const v = get?.(host);
    return v === null ? undefined : v;
  };
}

export function isFloatAttribute(name: string): boolean {
  return FLOATS.has(name);
}

const HOST = Symbol("host");

/**
 * ComputeCapabilitiesFilter._get_capabilities: walk `scope` from the host — an attribute, else the
 * key in its stats; then into dicts, parsing JSON text on the way. Undefined where Nova gets None.
 */
export function hostCapability(host: HostState, scope: readonly string[]): unknown {
  let cap: unknown = HOST;
  for (const key of scope) {
    if (typeof cap === "string") {
      try {
        cap = JSON.parse(cap);
      } catch {
        return undefined;
      }
    }
    if (cap === HOST) cap = hostAttribute(host, key) ?? host.stats[key];
    else if (cap !== null && typeof cap === "object" && !Array.isArray(cap)) {
      cap = Object.hasOwn(cap, key) ? (cap as Record<string, unknown>)[key] : undefined;
    } else {
      // getattr on anything else is None, and it has no stats: AttributeError, so None.
      return undefined;
    }
    if (cap === undefined || cap === null) return undefined;
  }
  return cap;
}

/**
 * hostCapability(host, scope) for one scope, resolved once: a one-key scope (the usual
 * "capabilities:vcpus_total") reads its attribute directly, else its stat.
 */
export function hostCapabilityOf(scope: readonly string[]): (host: HostState) => unknown {
  if (scope.length !== 1) return (host) => hostCapability(host, scope);
  const key = scope[0]!;
  const attribute = hostAttributeOf(key);
  return (host) => {
    const cap = attribute(host) ?? host.stats[key];
    return cap === null ? undefined : cap;
  };
}
