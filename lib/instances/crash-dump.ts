// Nova's trigger_crash_dump on the instance record: no task state (Nova's compute manager changes
// neither task nor power state: what the NMI does is the guest's own configuration), only the
// action's event as the host reports it, and a fault when the driver could not (wrap_instance_fault).
import { fault } from "./faults.js";
import { event, transitionWithEvent } from "./transition.js";
import type { InstanceRecord } from "./types.js";

/** The host's event (wrap_instance_event on the compute manager's trigger_crash_dump). */
export const EVENT_CRASH_DUMP = "compute_trigger_crash_dump";

/** compute-events: the host sent the NMI, or could not. Fenced by the host and the action. */
export function crashDumpDone(r: {
  request_id: string;
  instance_uuid: string;
  host: string;
  started_at: string;
  sent_at: string;
  ok: boolean;
  details: string | null;
}): Promise<InstanceRecord | undefined> {
  const ev = event(
    EVENT_CRASH_DUMP,
    0,
    r.ok ? "Success" : "Error",
    r.host,
    r.details,
    new Date(r.started_at),
    new Date(r.sent_at),
  );
  return transitionWithEvent({ id: r.instance_uuid, request_id: r.request_id }, ev, {
    set: ["updated_at = :now", ...(r.ok ? [] : ["fault = :fault"])],
    condition: "deleted = :false AND host = :h",
    values: {
      ":now": r.sent_at,
      ":false": false,
      ":h": r.host,
      ...(r.ok
        ? {}
        : {
            ":fault": fault(`Triggering a crash dump of instance ${r.instance_uuid} failed`, r.details ?? ""),
          }),
    },
  });
}
