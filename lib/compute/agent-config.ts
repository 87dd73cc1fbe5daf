// novaless-compute's configuration, in nova.conf's INI style (/etc/novaless/compute.conf). Its
// options are rows of the one table in lib/config.ts (those with `agent`), read from compute.conf's
// [group] name and NOVALESS_<GROUP>_<NAME>. Precedence, lowest first: defaults, the stack's outputs
// (--stack-outputs, the file `cdk deploy --outputs-file` writes), the file, the environment, flags.
// The help text and packaging/compute.conf.example (`npm run docs:config`) come from the table.
import { parse as parseIni } from "ini";
import {
  AGENT_OPTIONS,
  AGENT_SECTIONS,
  type AgentSection,
  agentDefault,
  agentEnvName,
  type ConfigOption,
  checkOption,
} from "../config.js";
import { checkBridgeKinds, parseBridgeMappings } from "./drivers/vif.js";

type Option = ConfigOption;

export type AgentConfig = Record<AgentSection, Record<string, string | number | boolean | undefined>>;

const STACK_OUTPUTS: Record<string, string> = {
  ComputeEventsUrl: "events_url",
  ComputeQueuePrefix: "compute_queue_prefix",
  ComputeHostRoleArn: "assume_role_arn",
  ImagesBucket: "images_bucket",
  Region: "region",
};

export class ConfigError extends Error {
  override name = "ConfigError";
}

const envName = agentEnvName;
const sectionOf = (o: Option) => o.group as AgentSection;

/** The kind an error names: int, float, bool or string. */
const kindName = (o: Option) => o.kind.replace("?", "");

function coerce(o: Option, raw: unknown, where: string): string | number | boolean {
  const r =
    typeof raw === "string" || typeof raw === "number" || typeof raw === "boolean"
      ? checkOption(o, typeof raw === "string" ? raw.trim() : raw)
      : ({ ok: false, problem: "is not a value" } as const);
  if (r.ok && r.value !== null && !Array.isArray(r.value)) return r.value;
  const problem = r.ok ? "is not a value" : r.problem;
  const typeError = !/^(must be one of|is below its minimum)/.test(problem);
  throw new ConfigError(
    `[${o.group}] ${o.name} = ${JSON.stringify(raw)} (${where}) ${typeError ? `is not a valid ${kindName(o)}` : problem}`,
  );
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
    ...AGENT_OPTIONS.flatMap((x) => (x.agent?.flag ? [x.agent.flag] : [])),
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
    if (raw !== undefined && raw !== "") config[sectionOf(x)][x.name] = coerce(x, raw, where);
  };
  for (const x of AGENT_OPTIONS) {
    const d = agentDefault(x);
    if (d !== undefined) config[sectionOf(x)][x.name] = d;
  }
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
      const x = AGENT_OPTIONS.find((p) => p.group === "novaless" && p.name === key)!;
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
      if (!(AGENT_SECTIONS as readonly string[]).includes(s))
        throw new ConfigError(`${file}: unknown section [${s}]`);
    }
    for (const section of AGENT_SECTIONS) {
      const values = (sectionOf(section) ?? {}) as Record<string, unknown>;
      for (const [key, raw] of Object.entries(values)) {
        const x = AGENT_OPTIONS.find((p) => p.group === section && p.name === key);
        if (!x) throw new ConfigError(`${file}: unknown option ${key} in [${section}]`);
        put(x, raw, file);
      }
    }
  }
  for (const x of AGENT_OPTIONS) put(x, o.env[envName(x)], envName(x));
  for (const x of AGENT_OPTIONS) {
    const flag = x.agent?.flag;
    if (flag && flags[flag] !== undefined) put(x, flags[flag], `--${flag}`);
  }
  for (const s of sets) {
    const m = /^([A-Za-z]+)\.([a-z_]+)=(.*)$/.exec(s);
    const x = m && AGENT_OPTIONS.find((p) => p.group === m[1] && p.name === m[2]);
    if (!m || !x) throw new ConfigError(`--set ${s}: expected section.key=value of a known option`);
    put(x, m[3], `--set ${s}`);
  }
  config.libvirt.images_path ??= `${String(config.DEFAULT.instances_path).replace(/\/$/, "")}/_base`;
  for (const x of AGENT_OPTIONS) {
    if (x.agent?.required && config[sectionOf(x)][x.name] === undefined) {
      throw new ConfigError(
        `[${x.group}] ${x.name} is required: ${x.help} Set it in ${file}, with ${envName(x)}, or from the stack's outputs with --stack-outputs FILE`,
      );
    }
  }
  const bridges = { ovs: {}, linux: {} };
  for (const [section, kind] of [
    ["ovs", "ovs"],
    ["linux_bridge", "linux"],
  ] as const) {
    try {
      bridges[kind] = parseBridgeMappings(String(config[section].bridge_mappings ?? ""));
    } catch (e) {
      throw new ConfigError(
        `[${section}] bridge_mappings = ${JSON.stringify(config[section].bridge_mappings)}: ${(e as Error).message}`,
      );
    }
  }
  try {
    checkBridgeKinds(bridges);
  } catch (e) {
    throw new ConfigError((e as Error).message);
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
  return { DEFAULT: {}, libvirt: {}, image_cache: {}, ovs: {}, linux_bridge: {}, novaless: {}, fake: {} };
}

const defaultOf = (x: Option) => {
  const d = agentDefault(x);
  return d !== undefined ? String(d) : (x.agent?.defaultText ?? x.defaultText ?? "unset");
};

export function helpText(): string {
  const lines = [
    "usage: novaless-compute [--config-file /etc/novaless/compute.conf] [--stack-outputs FILE [--stack NAME]]",
    "                        [--host NAME] [--driver exec|libvirt|fake] [--libvirt-uri URI] [--instances-path DIR]",
    "                        [--set section.key=value ...]",
    "",
    "Options (file section and key; environment NOVALESS_<SECTION>_<KEY>; default):",
  ];
  for (const x of AGENT_OPTIONS) {
    const flag = x.agent?.flag;
    lines.push(`  [${x.group}] ${x.name}${flag ? ` (--${flag})` : ""}  default: ${defaultOf(x)}`);
    lines.push(`      ${x.help}`);
  }
  return `${lines.join("\n")}\n`;
}

/** packaging/compute.conf.example: every option, commented, with its default. */
export function exampleConf(): string {
  const out = [
    "# /etc/novaless/compute.conf: novaless-compute's configuration (nova.conf's INI style).",
    "# Generated from lib/config.ts by `npm run docs:config`; every option is shown commented with its default.",
    "# `novaless-compute --stack-outputs outputs.json` fills the [novaless] section from `cdk deploy --outputs-file`.",
  ];
  for (const section of AGENT_SECTIONS) {
    out.push("", `[${section}]`);
    for (const x of AGENT_OPTIONS.filter((p) => p.group === section)) {
      const literal = agentDefault(x) !== undefined;
      out.push(
        `# ${x.help}${literal ? "" : ` Default: ${defaultOf(x)}.`}`,
        `#${x.name} =${literal ? ` ${String(agentDefault(x))}` : ""}`,
      );
    }
  }
  return `${out.join("\n")}\n`;
}
