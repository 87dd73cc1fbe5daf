// POST /os-server-external-events (Nova's server_external_events.py): other services (Neutron,
// Cinder, Ironic, Cyborg) tell Nova what happened to a server. Each event gets its own code: 404
// for a server that does not exist, 400 for a missing tag where one is needed, 422 for a server
// on no host yet, 200 when accepted; the answer is 207 when any event failed (since Nova's
// "Nix os-server-external-events 404 condition", never 404 as a whole).
// What an accepted event does here: power-update (2.76) moves the server's state as Nova's
// power_update does (lib/instances/power-update.ts), with its start or stop action; the others
// wait on nothing in novaless (no Neutron port binding or Cinder volume to wait for), so each is
// logged, as Nova's API logs "Creating event", and answered.
import { z } from "zod";
import { applyPowerUpdate, type PowerUpdateTag } from "../../instances/power-update.js";
import type { InstanceRecord } from "../../instances/types.js";
import { log } from "../../log.js";
import { policyForbidden } from "../errors.js";
import type { ApiResult, Route, RouteCall } from "../request.js";
import { parseJsonBody, UUID_RE, validate } from "../validation/common.js";
import { actionRecord } from "./instance-action.js";
import { canSeeServer } from "./servers.js";

/** Nova's rule: service_or_admin (the service role, or an admin). */
export const EXTERNAL_EVENTS_RULE = "os_compute_api:os-server-external-events:create";

/** Event names by the microversion that added them (Nova's schemas/server_external_events.py). */
const NAMES: readonly { name: string; min: string }[] = [
  { name: "network-changed", min: "2.1" },
  { name: "network-vif-plugged", min: "2.1" },
  { name: "network-vif-unplugged", min: "2.1" },
  { name: "network-vif-deleted", min: "2.1" },
  { name: "volume-extended", min: "2.51" },
  { name: "power-update", min: "2.76" },
  { name: "accelerator-request-bound", min: "2.82" },
  { name: "volume-reimaged", min: "2.93" },
];

/** Nova's TAG_REQUIRED: events that mean nothing without the volume, power state or ARQ they name. */
const TAG_REQUIRED = new Set(["volume-extended", "power-update", "accelerator-request-bound"]);

/** Nova's InstanceExternalEvent.status values. */
const STATUSES = ["failed", "completed", "in-progress"] as const;

function bodySchema(names: [string, ...string[]]) {
  return z.strictObject({
    events: z
      .array(
        z.strictObject({
          name: z.enum(names),
          server_uuid: z.string().regex(UUID_RE, { message: "is not a 'uuid'" }),
          status: z.enum(STATUSES).optional(),
          tag: z.string().max(255).optional(),
        }),
      )
      .min(1),
  });
}

type EventIn = z.output<ReturnType<typeof bodySchema>>["events"][number];
type EventOut = EventIn & { status: (typeof STATUSES)[number]; code: 200 | 400 | 404 | 422 };

async function createEvents(call: RouteCall): Promise<ApiResult> {
  const { ctx, deps } = call;
  const names = NAMES.filter((n) => ctx.version.atLeast(n.min)).map((n) => n.name) as [string, ...string[]];
  const { events } = validate(bodySchema(names), parseJsonBody(call.body));
  const { auth } = ctx;
  if (!auth.isAdmin && !auth.roles.includes("service")) throw policyForbidden(EXTERNAL_EVENTS_RULE);

  const ids = [...new Set(events.map((e) => e.server_uuid))];
  const found = new Map<string, InstanceRecord>();
  await Promise.all(
    ids.map(async (id) => {
      const rec = await deps.getInstance(id);
      if (rec && !rec.deleted && canSeeServer(rec, auth)) found.set(id, rec);
    }),
  );

  const out: EventOut[] = [];
  for (const e of events) {
    const rec = found.get(e.server_uuid);
    if (!rec) out.push({ ...e, status: "failed", code: 404 });
    else if (TAG_REQUIRED.has(e.name) && e.tag === undefined) out.push({ ...e, status: "failed", code: 400 });
    else if (!rec.host) out.push({ ...e, status: "failed", code: 422 });
    else {
      out.push({ ...e, status: "completed", code: 200 });
      log.info("api.external_event", {
        request_id: ctx.requestId,
        instance_uuid: rec.id,
        event: e.name,
        tag: e.tag ?? null,
        event_status: e.status ?? "completed",
        host: rec.host,
      });
      if (e.name === "power-update") await powerUpdate(call, rec, e.tag!);
    }
  }
  const failed = out.some((e) => e.code !== 200);
  return { status: failed ? 207 : 200, body: { events: out } };
}

/**
 * Nova's API records start or stop and the host's power_update does the rest; a tag other than
 * POWER_ON or POWER_OFF is skipped (Nova logs it and sends nothing). The write is conditioned on
 * the record as read: a server changed meanwhile is read again.
 */
async function powerUpdate(call: RouteCall, first: InstanceRecord, tag: string): Promise<void> {
  if (tag !== "POWER_ON" && tag !== "POWER_OFF") {
    log.warn("api.external_event_invalid_power_state", { instance_uuid: first.id, tag });
    return;
  }
  const action = actionRecord(tag === "POWER_ON" ? "start" : "stop", call);
  let rec: InstanceRecord | undefined = first;
  for (let i = 0; i < 3 && rec && !rec.deleted; i++) {
    if ((await applyPowerUpdate(rec, tag as PowerUpdateTag, action)).written) return;
    rec = await call.deps.getInstance(rec.id);
  }
}

export const externalEventRoutes: Route[] = [
  { method: "POST", pattern: "/os-server-external-events", handler: createEvents },
];
