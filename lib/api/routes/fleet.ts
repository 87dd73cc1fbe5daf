// GET /os-fleet (admin, novaless): the whole fleet in one compact answer for the console's map,
// or with `changes-since` only the hosts written since (the hosts' change feed, the same Queries
// the scheduler refreshes with, then those hosts), so a console polling every few seconds reads
// what changed, not 10,000 items.
import { schedulerConfig } from "../../config.js";
import { readChangedHosts } from "../../placement/hosts.js";
import { requireAdmin } from "../auth.js";
import type { ApiResult, Route, RouteCall } from "../request.js";
import { parseChangeTime } from "../validation/common.js";
import { fleetView } from "../views/fleet.js";

export const FLEET_RULE = "novaless:fleet:show";

/**
 * The feed's entries follow their writes, reads are eventually consistent and writers' clocks
 * differ: look back this far.
 */
export const FLEET_FEED_LAG_MS = 5_000;

export async function showFleet({ ctx, deps, query }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, FLEET_RULE);
  const since = parseChangeTime(query, "changes-since");
  const started = deps.now().getTime();
  const [hosts, aggregates] = await Promise.all([
    since ? (deps.readChangedHosts ?? readChangedHosts)(since) : deps.listHosts(),
    deps.listAggregates(),
  ]);
  ctx.logFields.hosts = hosts.length;
  return {
    status: 200,
    body: fleetView(hosts, aggregates, {
      defaultZone: schedulerConfig().default_availability_zone,
      full: !since,
      nextChangesSince: new Date(started - FLEET_FEED_LAG_MS).toISOString(),
    }),
  };
}

export const fleetRoutes: Route[] = [{ method: "GET", pattern: "/os-fleet", handler: showFleet }];
