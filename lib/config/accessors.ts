// What each part reads: an option's value by its key, and each part's options together.

import type { OptionValue } from "./option.js";
import { checkOption, envText, parseOption, readOption } from "./parse.js";
import { type NOVA_QUOTA_DEFAULTS, QUOTA_OPTIONS } from "./quota.js";
import { RESOURCE_OPTIONS, type Resources } from "./resources.js";
import { SCHEDULER_OPTIONS, type SchedulerConfig, type SchedulerOption } from "./scheduler.js";
import { option } from "./table.js";

/** The environment variable an option is read from: NOVALESS_<OPTION> (lists comma-separated). */
export function schedulerEnvName(o: SchedulerOption): string {
  return o.env;
}

/** An option's value from its text (an environment variable, or a scenario's string); throws if invalid. */
export function parseSchedulerOption(
  o: SchedulerOption,
  raw: string,
): SchedulerConfig[keyof SchedulerConfig] {
  return parseOption(o, raw) as SchedulerConfig[keyof SchedulerConfig];
}

export function schedulerConfig(): SchedulerConfig {
  const out: Record<string, unknown> = {};
  for (const o of SCHEDULER_OPTIONS) out[o.key] = readOption(o);
  return out as unknown as SchedulerConfig;
}

/** The environment that schedulerConfig() reads back as `options` (the stack sets it on functions). */
export function schedulerEnvironment(options: SchedulerConfig): Record<string, string> {
  const env: Record<string, string> = {};
  for (const o of SCHEDULER_OPTIONS) {
    const v = options[o.key];
    env[o.env] = Array.isArray(v) ? v.join(",") : v === null ? "" : String(v);
  }
  return env;
}

/** An option's value from the environment, by its key. */
export const optionValue = <T extends OptionValue>(key: string): T => readOption(option(key)) as T;
const read = optionValue;

export function resources(): Resources {
  return Object.fromEntries(RESOURCE_OPTIONS.map((o) => [o.key, readOption(o)])) as unknown as Resources;
}

/** [DEFAULT] allow_resize_to_same_host and resize_confirm_window (seconds, 0 = off). */
export function moveOptions(): {
  allowResizeToSameHost: boolean;
  resizeConfirmWindow: number;
  shelvedOffloadTime: number;
  autoEvacuateGrace: number;
  autoEvacuateRate: number;
} {
  return {
    allowResizeToSameHost: read<boolean>("allow_resize_to_same_host"),
    resizeConfirmWindow: read<number>("resize_confirm_window"),
    shelvedOffloadTime: read<number>("shelved_offload_time"),
    autoEvacuateGrace: read<number>("auto_evacuate_grace"),
    autoEvacuateRate: read<number>("auto_evacuate_rate"),
  };
}

/** [DEFAULT] reclaim_instance_interval (seconds; 0 or less: deletes are not deferred). */
export function reclaimInstanceInterval(): number {
  return read<number>("reclaim_instance_interval");
}

/** [DEFAULT] instance_build_timeout (seconds). */
export function instanceBuildTimeout(): number {
  return read<number>("instance_build_timeout");
}

/** report_path_suspect_fraction: the share of silent hosts at which the watchdog holds (lib/placement/report-path.ts). */
export function reportPathSuspectFraction(): number {
  return read<number>("report_path_suspect_fraction");
}

/** Largest API request body accepted, in bytes (Nova's max_request_body_size is 112 KiB). */
export const MAX_REQUEST_BODY_BYTES = read<number>("max_request_body_size");

export interface ApiOptions {
  multiInstanceNameTemplate: string;
  /** the public base URL for links, without trailing slashes; undefined: from the request */
  publicUrl: string | undefined;
  consoleTimeoutSeconds: number;
  /** the token table's JSON text; null: the demo tokens */
  authTokens: string | null;
  authTokensSecret: string | null;
}

export function apiOptions(): ApiOptions {
  return {
    multiInstanceNameTemplate: read("multi_instance_display_name_template"),
    publicUrl: read<string | null>("compute_link_prefix")?.replace(/\/+$/, "") || undefined,
    consoleTimeoutSeconds: read("console_timeout"),
    authTokens: read("auth_tokens"),
    authTokensSecret: read("auth_tokens_secret"),
  };
}

export interface IdentityOptions {
  keystoneUrl: string | null;
  keystoneCacheSeconds: number;
  tokenExpiration: number;
  tokenRevocationCacheTime: number;
  passwordHashRounds: number;
  tokenKeySecret: string | null;
  tokenKey: string | null;
}

export function identityOptions(): IdentityOptions {
  return {
    keystoneUrl: read("keystone_url"),
    keystoneCacheSeconds: read("keystone_cache_seconds"),
    tokenExpiration: read("token_expiration"),
    tokenRevocationCacheTime: read("token_revocation_cache_time"),
    passwordHashRounds: read("password_hash_rounds"),
    tokenKeySecret: read("token_key_secret"),
    tokenKey: read("token_key"),
  };
}

/**
 * The deployment's quota defaults: the [quota] options set (NOVALESS_QUOTA_<RESOURCE>, or an
 * alias) to a valid value; the others are absent, so the defaults apply as the caller decides.
 */
export function quotaDefaults(
  env: Record<string, string | undefined> = process.env,
): Partial<Record<keyof typeof NOVA_QUOTA_DEFAULTS, number>> {
  const out: Partial<Record<string, number>> = {};
  for (const o of QUOTA_OPTIONS) {
    const text = envText(o, env);
    if (text === undefined) continue;
    const r = checkOption(o, text);
    if (r.ok && Number.isInteger(r.value)) out[o.name] = r.value as number;
  }
  return out;
}

/** novaless-audit's grace for claims that may be mid-placement, in seconds. */
export function placementAuditGraceSeconds(): number {
  return read("placement_audit_grace_seconds");
}

/** [placement] fleet_snapshot_interval, seconds. */
export function fleetSnapshotInterval(): number {
  return read("fleet_snapshot_interval");
}

export type LogLevel = "debug" | "info" | "warn" | "error";

export interface ObservabilityOptions {
  logLevel: LogLevel;
  serviceName: string;
  /** null: unset (metrics on in Lambda only) */
  metricsDisabled: boolean | null;
}

export function observabilityOptions(): ObservabilityOptions {
  return {
    logLevel: read("log_level"),
    serviceName: read("service_name"),
    metricsDisabled: read("metrics_disabled"),
  };
}

// ── The process's environment beyond options ──────────────────────────────────────────────────

/** Whether this process is a Lambda function (its runtime sets AWS_LAMBDA_FUNCTION_NAME). */
export function inLambda(): boolean {
  return Boolean(process.env.AWS_LAMBDA_FUNCTION_NAME);
}

/** This process's PATH, which the exec driver hands on to its guests. */
export function inheritedPath(): string {
  return process.env.PATH ?? "/usr/bin:/bin";
}
