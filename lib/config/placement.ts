// Placement's options (novaless-audit, the fleet snapshot).
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
  row({
    key: "fleet_snapshot_interval",
    group: "placement",
    name: "fleet_snapshot_interval",
    nova: false,
    env: "NOVALESS_PLACEMENT_FLEET_SNAPSHOT_INTERVAL",
    kind: "float",
    default: 5,
    min: 1,
    help: "Seconds between rewrites of the fleet snapshot (fleet/hosts.json.gz in the images bucket), which a cold scheduler reads with the change feed since it instead of a Scan of the Hosts table. A warm scheduler whose view is fresh rewrites it once the stored one is this much older than its view: the older it may be, the more of the feed a cold start reads after it.",
    topic: "placement",
  }),
];
