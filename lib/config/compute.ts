// novaless-compute's own options (compute.conf; lib/compute/agent-config.ts loads them).
import type { AgentUse, ConfigOption, OptionKind, OptionValue } from "./option.js";

const agentEnv = (group: string, name: string) => `NOVALESS_${group.toUpperCase()}_${name.toUpperCase()}`;

const agentOpt = (
  group: "DEFAULT" | "libvirt" | "image_cache" | "ovs" | "linux_bridge" | "novaless" | "fake",
  name: string,
  kind: OptionKind,
  value: OptionValue | undefined,
  help: string,
  extra: Partial<ConfigOption> & { agent?: AgentUse } = {},
): ConfigOption => ({
  key: `compute_${group === "DEFAULT" ? "" : `${group}_`}${name}`,
  group,
  name,
  nova: group === "DEFAULT" || group === "libvirt" || group === "image_cache",
  env: agentEnv(group, name),
  kind,
  ...(value === undefined ? {} : { default: value }),
  help,
  topic: "compute",
  ...extra,
  agent: extra.agent ?? {},
});

export const COMPUTE_OPTIONS: readonly ConfigOption[] = [
  agentOpt(
    "DEFAULT",
    "host",
    "string",
    undefined,
    "The host name this compute service registers as (Nova's [DEFAULT] host).",
    { defaultText: "the machine's FQDN", agent: { flag: "host" } },
  ),
  agentOpt("DEFAULT", "my_ip", "string", undefined, "The host's IP address (os-hypervisors host_ip).", {
    defaultText: "the first non-internal IPv4 address",
  }),
  agentOpt(
    "DEFAULT",
    "compute_driver",
    "string",
    "exec",
    "The virt driver: exec (each server a process), libvirt, or fake (simulation).",
    { choices: ["exec", "libvirt", "fake"], agent: { flag: "driver" } },
  ),
  agentOpt(
    "DEFAULT",
    "instances_path",
    "string",
    "/var/lib/novaless/instances",
    "Where instances' files live; its filesystem's size is the host's DISK_GB.",
    { agent: { flag: "instances-path" } },
  ),
  agentOpt(
    "DEFAULT",
    "sync_power_state_interval",
    "int",
    600,
    "Seconds between power-state syncs; -1 disables them.",
  ),
  agentOpt(
    "DEFAULT",
    "shutdown_timeout",
    "int",
    60,
    "Seconds a clean shutdown may take before the guest is forced off.",
  ),
  agentOpt("libvirt", "connection_uri", "string", "qemu:///system", "libvirt's connection URI.", {
    agent: { flag: "libvirt-uri" },
  }),
  agentOpt("libvirt", "virt_type", "string", "kvm", "The domain type: kvm, qemu (or test)."),
  agentOpt(
    "libvirt",
    "images_path",
    "string",
    undefined,
    "The image cache: <images_path>/<image id> is an image's file.",
    { defaultText: "<instances_path>/_base" },
  ),
  agentOpt(
    "libvirt",
    "device_detach_attempts",
    "int",
    8,
    "How many times a device (an interface) is asked off a running guest before its detach fails, each waiting device_detach_timeout for the guest to let it go. As Nova's.",
  ),
  agentOpt(
    "libvirt",
    "device_detach_timeout",
    "int",
    20,
    "Seconds each request to detach a device from a running guest waits for the guest to let it go. As Nova's.",
  ),
  agentOpt(
    "image_cache",
    "manager_interval",
    "int",
    2400,
    "Seconds between runs of the image cache manager, which removes from the libvirt image cache an image no guest of the host stands on and none has used for remove_unused_original_minimum_age_seconds (a later guest fetches it from the images bucket again); -1 never runs it. As Nova's.",
  ),
  agentOpt(
    "image_cache",
    "remove_unused_original_minimum_age_seconds",
    "int",
    86400,
    "Seconds a cached image no guest uses is kept before the image cache manager removes it. As Nova's.",
  ),
  // Neutron's openvswitch_agent.ini [ovs] bridge_mappings, read by the libvirt driver
  agentOpt(
    "ovs",
    "bridge_mappings",
    "string?",
    undefined,
    "Each physical network's Open vSwitch bridge on this host, <physical_network>:<bridge>, comma-separated (e.g. physnet1:br-ex,physnet2:br-vlan), as Neutron's Open vSwitch agent's option. A port on a network whose physical network is not listed fails its build here (PortBindingFailed); a vlan network's ports are tagged with their VLAN on that bridge (libvirt driver).",
    { defaultText: "none: a port fails to bind on this host" },
  ),
  // Neutron's linuxbridge_agent.ini [linux_bridge] bridge_mappings, read by the libvirt driver
  agentOpt(
    "linux_bridge",
    "bridge_mappings",
    "string?",
    undefined,
    "Each physical network's Linux bridge on this host, <physical_network>:<bridge>, comma-separated, as Neutron's Linux bridge agent's option, for a host without Open vSwitch. Its ports are plain taps on the bridge; a vlan network's port fails its build here (PortBindingFailed: libvirt 9.0 cannot tag a port on a Linux bridge). A physical network may be in this option or in [ovs] bridge_mappings, not both (libvirt driver).",
    { defaultText: "none" },
  ),
  agentOpt(
    "novaless",
    "events_url",
    "string",
    undefined,
    "compute-events' function URL, where the host posts its reports signed with its session (stack output ComputeEventsUrl).",
    { defaultText: "required", agent: { required: true } },
  ),
  agentOpt(
    "novaless",
    "compute_queue_prefix",
    "string",
    undefined,
    "Compute queues' prefix (stack output ComputeQueuePrefix).",
    { defaultText: "required", agent: { required: true } },
  ),
  agentOpt(
    "novaless",
    "images_bucket",
    "string",
    undefined,
    "The S3 bucket of snapshots' image data (stack output ImagesBucket): a snapshot is uploaded there, and a host boots one from it.",
    { defaultText: "the resource images_bucket (NOVALESS_IMAGES_BUCKET)" },
  ),
  agentOpt("novaless", "region", "string", undefined, "The stack's AWS region (stack output Region).", {
    defaultText: "the SDK's (AWS_REGION)",
  }),
  agentOpt(
    "novaless",
    "assume_role_arn",
    "string",
    undefined,
    "ComputeHostRole (stack output ComputeHostRoleArn), assumed with session name and tag novaless-host = the host.",
    { defaultText: "none: the credentials the SDK finds are the host's session already" },
  ),
  agentOpt(
    "novaless",
    "report_spool_path",
    "string",
    "/var/lib/novaless/reports",
    "Where the host keeps each report that answers a cast until compute-events has applied it (one file per report, in the unit's StateDirectory): kept across restarts and outages, sent in order per instance. Back it up with the instances; never share it between hosts.",
  ),
  agentOpt("novaless", "concurrency", "int", 8, "Builds at once."),
  agentOpt("novaless", "wait_time_seconds", "int", 20, "The long poll's wait (SQS WaitTimeSeconds, 1-20)."),
  // One GetQueueAttributes a count: every 300 s is 8,640 requests, $0.0035 a host-month.
  agentOpt(
    "novaless",
    "dead_letter_check_interval",
    "int",
    300,
    "Seconds between the agent's counts of its dead-letter queue, reported with its heartbeats while not empty (the ComputeDeadLetters alarm's source); -1 disables them.",
  ),
  agentOpt("fake", "build_ms", "int", 1000, "How long a fake build takes."),
  agentOpt("fake", "fail_builds", "bool", false, "The fake driver fails every build."),
  agentOpt(
    "fake",
    "live_migration_ms",
    "int",
    2000,
    "How long a fake live migration takes; its source reports its progress meanwhile. force_complete ends it at once, an abort cancels it.",
  ),
];

/** The sections of compute.conf, in its order. */
export const AGENT_SECTIONS = [
  "DEFAULT",
  "libvirt",
  "image_cache",
  "ovs",
  "linux_bridge",
  "novaless",
  "fake",
] as const;
export type AgentSection = (typeof AGENT_SECTIONS)[number];

/** The order compute.conf and `novaless-compute --help` list [DEFAULT]'s options in. */
export const AGENT_DEFAULT_ORDER = [
  "host",
  "my_ip",
  "compute_driver",
  "instances_path",
  "default_availability_zone",
  "reserved_host_memory_mb",
  "reserved_host_cpus",
  "reserved_host_disk_mb",
  "cpu_allocation_ratio",
  "ram_allocation_ratio",
  "disk_allocation_ratio",
  "report_interval",
  "service_down_time",
  "sync_power_state_interval",
  "shutdown_timeout",
];

/** The environment variable novaless-compute reads an option from: NOVALESS_<GROUP>_<NAME>. */
export const agentEnvName = (o: ConfigOption): string => agentEnv(o.group, o.name);
