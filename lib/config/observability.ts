// Logs and metrics, read by every function, the local runtime and novaless-compute.
import { type ConfigOption, row } from "./option.js";

export const OBSERVABILITY_OPTIONS: readonly ConfigOption[] = [
  row({
    key: "log_level",
    group: "DEFAULT",
    name: "log_level",
    nova: false,
    env: "NOVALESS_LOG_LEVEL",
    kind: "string",
    default: "info",
    choices: ["debug", "info", "warn", "error"],
    lenient: true,
    help: "The least severe level logged (any case); an unknown level is info.",
    topic: "observability",
  }),
  row({
    key: "service_name",
    group: "powertools",
    name: "service_name",
    nova: false,
    env: "POWERTOOLS_SERVICE_NAME",
    kind: "string",
    default: "novaless",
    help: "The `service` of every log line and metric (the stack sets api, scheduler, conductor, …).",
    topic: "observability",
  }),
  row({
    key: "metrics_disabled",
    group: "powertools",
    name: "metrics_disabled",
    nova: false,
    env: "POWERTOOLS_METRICS_DISABLED",
    kind: "bool?",
    default: null,
    defaultText: "metrics on in Lambda, off elsewhere",
    lenient: true,
    help: "true stops the build metrics (CloudWatch EMF); false prints them outside Lambda too.",
    topic: "observability",
  }),
];
