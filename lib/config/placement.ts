// Placement's options (novaless-audit).
import { type ConfigOption, row } from "./option.js";

export const PLACEMENT_OPTIONS: readonly ConfigOption[] = [
  row({
    key: "placement_audit_grace_seconds",
    group: "placement",
    name: "audit_grace_seconds",
    nova: false,
    env: "NOVALESS_PLACEMENT_AUDIT_GRACE_SECONDS",
    kind: "float",
    default: 300,
    min: 0,
    help: "novaless-audit: claims younger than this, of instances still in BUILD, may be mid-placement (not leaks).",
    topic: "placement",
  }),
];
