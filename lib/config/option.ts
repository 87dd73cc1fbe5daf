// The shape of an option: what each group's file (lib/config/*.ts, as nova/conf/*.py) declares.

/** An option's type; `?` kinds may be unset (null), an empty value unsets them. */
export type OptionKind = "int" | "float" | "bool" | "list" | "string" | "float?" | "string?" | "bool?";
export type OptionValue = number | boolean | string | string[] | null;

/** The part an option belongs to: docs/configuration.md's sections. */
export type Topic =
  | "scheduler"
  | "compute"
  | "conductor"
  | "api"
  | "identity"
  | "quota"
  | "placement"
  | "observability"
  | "deployment"
  | "resources";

export interface ConfigOption {
  /** the name the code reads it by (SchedulerConfig's keys for the scheduler's) */
  key: string;
  /** its group and name in nova.conf (or keystone.conf) style */
  group: string;
  name: string;
  /** Nova's, Keystone's or keystonemiddleware's own option; otherwise novaless's */
  nova: boolean;
  /** the environment variable it is read from */
  env: string;
  /** older environment variables still honoured after env */
  aliases?: readonly string[];
  kind: OptionKind;
  /** undefined: required, or computed when read (defaultText says how) */
  default?: OptionValue;
  defaultText?: string;
  /** smallest accepted value (Nova's IntOpt min) */
  min?: number;
  choices?: readonly string[];
  /** an invalid value is ignored (the default applies) rather than refused */
  lenient?: boolean;
  help: string;
  topic: Topic;
  /** novaless-compute reads it too, from compute.conf [group] name and NOVALESS_<GROUP>_<NAME> */
  agent?: AgentUse;
}

export interface AgentUse {
  required?: boolean;
  /** a flag that sets it (besides --set group.name=value) */
  flag?: string;
  /** the agent's default where it differs from the table's (see report_interval) */
  default?: OptionValue;
  defaultText?: string;
}

/** An option row, typed as one (the groups' tables are plain arrays of rows). */
export const row = (o: ConfigOption): ConfigOption => o;
