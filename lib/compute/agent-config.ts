// novaless-compute's configuration, declared once: every option with its section, type, default
// and meaning, in nova.conf's INI style (/etc/novaless/compute.conf), Nova's names where Nova has
// them. Precedence, lowest first: defaults, the stack's outputs (--stack-outputs, the file
// `cdk deploy --outputs-file` writes), the file, the environment (NOVALESS_<SECTION>_<KEY>),
// flags. The help text and packaging/compute.conf.example are generated from this table.
import { parse as parseIni } from "ini";
import { z } from "zod";

type Kind = "string" | "int" | "float" | "bool";

interface Option {
  section: "DEFAULT" | "libvirt" | "novaless" | "fake";
  key: string;
  kind: Kind;
  /** undefined: no default (required ones say so in `required`) */
  default?: string | number | boolean;
  /** a default computed at load time, described here */
  defaultText?: string;
  help: string;
  required?: boolean;
  /** a flag that sets it (besides --set section.key=value) */
  flag?: string;
  choices?: string[];
}

export const OPTIONS: Option[] = [
  {
    section: "DEFAULT",
    key: "host",
    kind: "string",
    defaultText: "the machine's FQDN",
    help: "The host name this compute service registers as (Nova's [DEFAULT] host).",
    flag: "host",
  },
  {
    section: "DEFAULT",
    key: "my_ip",
    kind: "string",
    defaultText: "the first non-internal IPv4 address",
    help: "The host's IP address (os-hypervisors host_ip).",
  },
  {
    section: "DEFAULT",
    key: "compute_driver",
    kind: "string",
    default: "exec",
    choices: ["exec", "libvirt", "fake"],
    help: "The virt driver: exec (each server a process), libvirt, or fake (simulation).",
    flag: "driver",
  },
  {
    section: "DEFAULT",
    key: "instances_path",
    kind: "string",
    default: "/var/lib/novaless/instances",
    help: "Where instances' files live; its filesystem's size is the host's DISK_GB.",
    flag: "instances-path",
  },
  {
    section: "DEFAULT",
    key: "default_availability_zone",
    kind: "string",
    default: "nova",
    help: "The host's availability zone until an aggregate says otherwise.",
  },
  {
    section: "DEFAULT",
    key: "reserved_host_memory_mb",
    kind: "int",
    default: 512,
    help: "Memory (MB) kept for the host, not for instances.",
  },
  { section: "DEFAULT", key: "reserved_host_cpus", kind: "int", default: 0, help: "CPUs kept for the host." },
  {
    section: "DEFAULT",
    key: "reserved_host_disk_mb",
    kind: "int",
    default: 0,
    help: "Disk (MB) kept for the host.",
  },
  {
    section: "DEFAULT",
    key: "cpu_allocation_ratio",
    kind: "float",
    defaultText: "16.0 (initial_cpu_allocation_ratio)",
    help: "Virtual CPUs per physical CPU.",
  },
  {
    section: "DEFAULT",
    key: "ram_allocation_ratio",
    kind: "float",
    defaultText: "1.5 (initial_ram_allocation_ratio)",
    help: "Virtual memory per physical memory.",
  },
  {
    section: "DEFAULT",
    key: "disk_allocation_ratio",
    kind: "float",
    defaultText: "1.0 (initial_disk_allocation_ratio)",
    help: "Virtual disk per physical disk.",
  },
  {
    section: "DEFAULT",
    key: "report_interval",
    kind: "int",
    default: 10,
    help: "Seconds between heartbeats (Nova's report_interval).",
  },
  {
    section: "DEFAULT",
    key: "sync_power_state_interval",
    kind: "int",
    default: 600,
    help: "Seconds between power-state syncs; -1 disables them.",
  },
  {
    section: "DEFAULT",
    key: "shutdown_timeout",
    kind: "int",
    default: 60,
    help: "Seconds a clean shutdown may take before the guest is forced off.",
  },
  {
    section: "libvirt",
    key: "connection_uri",
    kind: "string",
    default: "qemu:///system",
    help: "libvirt's connection URI.",
    flag: "libvirt-uri",
  },
  {
    section: "libvirt",
    key: "virt_type",
    kind: "string",
    default: "kvm",
    help: "The domain type: kvm, qemu (or test).",
  },
  {
    section: "libvirt",
    key: "images_path",
    kind: "string",
    defaultText: "<instances_path>/_base",
    help: "The image cache: <images_path>/<image id> is an image's file.",
  },
  {
    section: "novaless",
    key: "events_queue_url",
    kind: "string",
    required: true,
    help: "The compute-events queue (stack output ComputeEventsQueueUrl).",
  },
  {
    section: "novaless",
    key: "compute_queue_prefix",
    kind: "string",
    required: true,
    help: "Compute queues' prefix (stack output ComputeQueuePrefix).",
  },
  {
    section: "novaless",
    key: "region",
    kind: "string",
    defaultText: "the SDK's (AWS_REGION)",
    help: "The stack's AWS region (stack output Region).",
  },
  {
    section: "novaless",
    key: "assume_role_arn",
    kind: "string",
    defaultText: "none: the credentials the SDK finds are the host's session already",
    help: "ComputeHostRole (stack output ComputeHostRoleArn), assumed with session name and tag novaless-host = the host.",
  },
  { section: "novaless", key: "concurrency", kind: "int", default: 8, help: "Builds at once." },
  {
    section: "novaless",
    key: "wait_time_seconds",
    kind: "int",
    default: 20,
    help: "The long poll's wait (SQS WaitTimeSeconds, 1-20).",
  },
  { section: "fake", key: "build_ms", kind: "int", default: 1000, help: "How long a fake build takes." },
  {
    section: "fake",
    key: "fail_builds",
    kind: "bool",
    default: false,
    help: "The fake driver fails every build.",
  },
];

export type AgentConfig = Record<Option["section"], Record<string, string | number | boolean | undefined>>;

const STACK_OUTPUTS: Record<string, string> = {
  ComputeEventsQueueUrl: "events_queue_url",
  ComputeQueuePrefix: "compute_queue_prefix",
  ComputeHostRoleArn: "assume_role_arn",
  Region: "region",
};

export class ConfigError extends Error {
  override name = "ConfigError";
}

const envName = (o: Option) => `NOVALESS_${o.section.toUpperCase()}_${o.key.toUpperCase()}`;

function coerce(o: Option, raw: unknown, where: string): string | number | boolean {
  const schema =
    o.kind === "int"
      ? z.coerce.number().int()
      : o.kind === "float"
        ? z.coerce.number()
        : o.kind === "bool"
          ? z
              .union([z.boolean(), z.enum(["true", "false", "True", "False", "1", "0", "yes", "no"])])
              .transform((v) => (typeof v === "boolean" ? v : ["true", "True", "1", "yes"].includes(v)))
          : z.string().min(1);
  const r = schema.safeParse(typeof raw === "string" ? raw.trim() : raw);
  if (!r.success)
    throw new ConfigError(
      `[${o.section}] ${o.key} = ${JSON.stringify(raw)} (${where}) is not a valid ${o.kind}`,
    );
  if (o.choices && !o.choices.includes(String(r.data)))
    throw new ConfigError(
      `[${o.section}] ${o.key} = ${JSON.stringify(raw)} (${where}) must be one of ${o.choices.join(", ")}`,
    );
  return r.data;
}

export interface LoadOptions {
  argv: string[];
  env: Record<string, string | undefined>;
  readFile: (path: string) => string | undefined;
  /** the machine's FQDN and first non-internal IPv4 (the defaults of host and my_ip) */
  machine: { fqdn: string; ip: string };
}

export const DEFAULT_CONFIG_FILE = "/etc/novaless/compute.conf";

/** Parses flags, reads the files, applies the precedence; throws ConfigError naming what is wrong. */
export function loadAgentConfig(o: LoadOptions): { config: AgentConfig; help: boolean } {
  const flags: Record<string, string | boolean> = {};
  const sets: string[] = [];
  const withValue = new Set([
    "config-file",
    "stack-outputs",
    "stack",
    "set",
    ...OPTIONS.flatMap((x) => (x.flag ? [x.flag] : [])),
  ]);
  for (let i = 0; i < o.argv.length; i++) {
    const a = o.argv[i]!;
    if (a === "--help" || a === "-h") return { config: emptyConfig(), help: true };
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(a);
    if (!m || !withValue.has(m[1]!)) throw new ConfigError(`unknown argument ${a} (see --help)`);
    const value = m[2] ?? o.argv[++i];
    if (value === undefined) throw new ConfigError(`--${m[1]} needs a value`);
    if (m[1] === "set") sets.push(value);
    else flags[m[1]!] = value;
  }
  const config = emptyConfig();
  const put = (x: Option, raw: unknown, where: string) => {
    if (raw !== undefined && raw !== "") config[x.section][x.key] = coerce(x, raw, where);
  };
  for (const x of OPTIONS) if (x.default !== undefined) config[x.section][x.key] = x.default;
  config.DEFAULT.host = o.machine.fqdn;
  config.DEFAULT.my_ip = o.machine.ip;

  const outputsFile = flags["stack-outputs"] as string | undefined;
  if (outputsFile) {
    const text = o.readFile(outputsFile);
    if (text === undefined) throw new ConfigError(`--stack-outputs ${outputsFile}: no such file`);
    let all: Record<string, Record<string, string>>;
    try {
      all = JSON.parse(text) as Record<string, Record<string, string>>;
    } catch (e) {
      throw new ConfigError(`--stack-outputs ${outputsFile} is not JSON: ${(e as Error).message}`);
    }
    const names = Object.keys(all);
    const stack = (flags.stack as string | undefined) ?? (names.length === 1 ? names[0] : undefined);
    if (!stack || !all[stack]) {
      throw new ConfigError(
        `--stack-outputs ${outputsFile} holds ${names.length ? names.join(", ") : "no stack"}: name one with --stack`,
      );
    }
    for (const [output, key] of Object.entries(STACK_OUTPUTS)) {
      const x = OPTIONS.find((p) => p.section === "novaless" && p.key === key)!;
      put(x, all[stack][output], `${outputsFile} output ${output}`);
    }
  }

  const file = (flags["config-file"] as string | undefined) ?? DEFAULT_CONFIG_FILE;
  const text = o.readFile(file);
  if (text === undefined && flags["config-file"])
    throw new ConfigError(`--config-file ${file}: no such file`);
  if (text !== undefined) {
    const ini = parseIni(text) as Record<string, unknown>;
    // nova.conf's [DEFAULT] options; `ini` puts keys before any section at the top level too
    const sectionOf = (s: string) =>
      s === "DEFAULT" ? { ...pickScalars(ini), ...(ini.DEFAULT as object) } : ini[s];
    for (const s of Object.keys(ini)) {
      if (typeof ini[s] !== "object") continue;
      if (!["DEFAULT", "libvirt", "novaless", "fake"].includes(s))
        throw new ConfigError(`${file}: unknown section [${s}]`);
    }
    for (const section of ["DEFAULT", "libvirt", "novaless", "fake"] as const) {
      const values = (sectionOf(section) ?? {}) as Record<string, unknown>;
      for (const [key, raw] of Object.entries(values)) {
        const x = OPTIONS.find((p) => p.section === section && p.key === key);
        if (!x) throw new ConfigError(`${file}: unknown option ${key} in [${section}]`);
        put(x, raw, file);
      }
    }
  }
  for (const x of OPTIONS) put(x, o.env[envName(x)], envName(x));
  for (const x of OPTIONS) if (x.flag && flags[x.flag] !== undefined) put(x, flags[x.flag], `--${x.flag}`);
  for (const s of sets) {
    const m = /^([A-Za-z]+)\.([a-z_]+)=(.*)$/.exec(s);
    const x = m && OPTIONS.find((p) => p.section === m[1] && p.key === m[2]);
    if (!m || !x) throw new ConfigError(`--set ${s}: expected section.key=value of a known option`);
    put(x, m[3], `--set ${s}`);
  }
  config.libvirt.images_path ??= `${String(config.DEFAULT.instances_path).replace(/\/$/, "")}/_base`;
  for (const x of OPTIONS) {
    if (x.required && config[x.section][x.key] === undefined) {
      throw new ConfigError(
        `[${x.section}] ${x.key} is required: ${x.help} Set it in ${file}, with ${envName(x)}, or from the stack's outputs with --stack-outputs FILE`,
      );
    }
  }
  const wait = Number(config.novaless.wait_time_seconds);
  if (wait < 1 || wait > 20)
    throw new ConfigError(`[novaless] wait_time_seconds must be 1-20 (SQS), got ${wait}`);
  return { config, help: false };
}

function pickScalars(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => typeof v !== "object"));
}

function emptyConfig(): AgentConfig {
  return { DEFAULT: {}, libvirt: {}, novaless: {}, fake: {} };
}

const defaultOf = (x: Option) =>
  x.default !== undefined ? String(x.default) : (x.defaultText ?? (x.required ? "required" : "unset"));

export function helpText(): string {
  const lines = [
    "usage: novaless-compute [--config-file /etc/novaless/compute.conf] [--stack-outputs FILE [--stack NAME]]",
    "                        [--host NAME] [--driver exec|libvirt|fake] [--libvirt-uri URI] [--instances-path DIR]",
    "                        [--set section.key=value ...]",
    "",
    "Options (file section and key; environment NOVALESS_<SECTION>_<KEY>; default):",
  ];
  for (const x of OPTIONS) {
    lines.push(`  [${x.section}] ${x.key}${x.flag ? ` (--${x.flag})` : ""}  default: ${defaultOf(x)}`);
    lines.push(`      ${x.help}`);
  }
  return `${lines.join("\n")}\n`;
}

/** packaging/compute.conf.example: every option, commented, with its default. */
export function exampleConf(): string {
  const out = [
    "# /etc/novaless/compute.conf: novaless-compute's configuration (nova.conf's INI style).",
    "# Generated from lib/compute/agent-config.ts; every option is shown commented with its default.",
    "# `novaless-compute --stack-outputs outputs.json` fills the [novaless] section from `cdk deploy --outputs-file`.",
  ];
  for (const section of ["DEFAULT", "libvirt", "novaless", "fake"] as const) {
    out.push("", `[${section}]`);
    for (const x of OPTIONS.filter((p) => p.section === section)) {
      const literal = x.default !== undefined;
      out.push(
        `# ${x.help}${literal ? "" : ` Default: ${defaultOf(x)}.`}`,
        `#${x.key} =${literal ? ` ${String(x.default)}` : ""}`,
      );
    }
  }
  return `${out.join("\n")}\n`;
}
