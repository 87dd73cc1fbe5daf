// A host's first registration as one request: its provider item, its change-feed entry and its
// first heartbeat in one TransactWriteItems, conditioned on the provider not being there yet.
// Three writes a host that a fleet's start makes 10,000 times; as three requests they were half of
// a registration's (docs/benchmarks.md, 2026-12-08). A host that is there already (a restart)
// registers as before: registerHost's update, then the heartbeat.
import { transactUnlessConditionFails } from "../aws/dynamo-transact.js";
import { resources } from "../config.js";
import { changeItem } from "./feed.js";
import { type HostRegistration, newHostItem } from "./hosts.js";
import { firstHeartbeat } from "./liveness.js";
import type { HostRecord } from "./types.js";

/**
 * Creates the host's provider item, its feed entry and its Services item together, or nothing:
 * the item created, or undefined when the host was there already. All or nothing, so the feed
 * entry is never lost here (as it may be between a write and its append elsewhere). The Services
 * item is put whole: a provider created now carries no down mark, so neither may its heartbeat.
 * On AWS a transaction's writes cost twice a single write's units (about 6 units a new host where
 * three writes cost 3), once in a host's life.
 */
export async function registerNewHost(
  reg: HostRegistration,
  now = new Date(),
): Promise<HostRecord | undefined> {
  const { hostsTable, hostChangesTable, servicesTable } = resources();
  const item = newHostItem(reg);
  const created = await transactUnlessConditionFails({
    TransactItems: [
      { Put: { TableName: hostsTable, Item: item, ConditionExpression: "attribute_not_exists(host)" } },
      {
        Put: {
          TableName: hostChangesTable,
          Item: changeItem({ host: reg.host, changed_at: item.changed_at }),
        },
      },
      { Put: { TableName: servicesTable, Item: firstHeartbeat(reg.host, now) } },
    ],
  });
  return created ? item : undefined;
}
