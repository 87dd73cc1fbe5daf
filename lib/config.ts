// Every option of novaless, declared once: its Nova group and name (Nova's, or Keystone's, where
// they have one), its environment variable, type, default and help. Each group's options live in
// their own file under lib/config/ (as nova/conf/*.py); this module is the one front the
// functions (API, scheduler, conductor), the local runtime, identity and novaless-compute import,
// and docs/configuration.md and packaging/compute.conf.example are generated from its table
// (`npm run docs:config`; test/unit/config-docs.test.ts fails when they drift).
// It sits at the bottom of lib's imports: it imports no other folder of lib.
export {
  apiOptions,
  fleetSnapshotInterval,
  identityOptions,
  inheritedPath,
  inLambda,
  instanceBuildTimeout,
  type LogLevel,
  MAX_REQUEST_BODY_BYTES,
  moveOptions,
  observabilityOptions,
  optionValue,
  parseSchedulerOption,
  placementAuditGraceSeconds,
  quotaDefaults,
  reclaimInstanceInterval,
  reportPathSuspectFraction,
  resources,
  schedulerConfig,
  schedulerEnvironment,
  schedulerEnvName,
} from "./config/accessors.js";
export { AGENT_SECTIONS, type AgentSection, agentEnvName } from "./config/compute.js";
export { DEPLOYMENT_OPTIONS } from "./config/deployment.js";
export type { ConfigOption, Topic } from "./config/option.js";
export { checkOption, parseOption } from "./config/parse.js";
export { NOVA_QUOTA_DEFAULTS } from "./config/quota.js";
export { DEFAULT_COMPUTE_QUEUE_PREFIX, type Resources } from "./config/resources.js";
export { SCHEDULER_DEFAULTS, SCHEDULER_OPTIONS, type SchedulerConfig } from "./config/scheduler.js";
export { AGENT_OPTIONS, agentDefault, OPTIONS, option } from "./config/table.js";
