// How a compute host tells compute-events what happened: its reports, signed as the host's
// session, through the host's spool (spool.ts) or, for the few that are not kept, directly.
import { FunctionUrlError, postToFunctionUrl, retryableStatus } from "../aws/function-url.js";
import { type Logger, logger } from "../log.js";
import { type ComputeReport, computeReport, type ReportBody } from "../messages/reports.js";
import type { PowerState } from "./drivers/driver.js";
import { MemorySpoolStore, ReportSpool, type SpoolStore } from "./spool.js";

/**
 * Registration and heartbeats are sent as they are, not spooled: the agent waits for its
 * registration to start, and only the latest heartbeat matters. So are the answers to the API's
 * questions (console output, diagnostics): the API waits for them a few seconds, and a late one
 * is read by nobody. Each is tried for about a minute at most (20 tries, each wait at most 10 s,
 * about 66 s on average), then given up; a heartbeat's successor is due a report_interval later.
 */
const DIRECT_RETRIES = { maxAttempts: 20, baseDelayMs: 100, maxDelayMs: 10_000 } as const;
const NOT_SPOOLED: ReadonlySet<ComputeReport["kind"]> = new Set([
  "register",
  "heartbeat",
  "console_output",
  "diagnostics",
]);

/**
 * One try of a spooled report: compute-events runs for 30 s at most, so a try that hangs past
 * that and a margin is given up and tried again (the spool decides when).
 */
const SPOOLED_TRY_MS = 35_000;

/** What sending a report gives: for a spooled one, kept; `delivered` says when compute-events applied it. */
export interface Sent {
  delivered: Promise<boolean>;
  /** what compute-events answered a report sent directly (a registration's names the host's queue) */
  answer?: string;
}

/**
 * Sends this host's reports to compute-events, through its function URL (AWS_IAM). Every report
 * that answers a cast, or says something of an instance, goes through the host's spool
 * (spool.ts): kept before `send` resolves, then delivered in order per instance, across restarts
 * and outages. The spool's store outlives this incarnation; start and stop its sender with the agent.
 */
export class Reporter {
  readonly spool: ReportSpool;

  constructor(
    readonly host: string,
    private readonly eventsUrl: string,
    /**
     * Runs a send as the host's own session whatever the caller's context (a process hosting
     * many hosts, as the local runtime does, stops one from another's context): compute-events
     * trusts a report only from the session of the host it speaks for.
     */
    private readonly asHost: <T>(fn: () => T) => T = (fn) => fn(),
    store: SpoolStore = new MemorySpoolStore(),
    private readonly log: Logger = logger({ host }),
  ) {
    this.spool = new ReportSpool(
      store,
      (body, signal) =>
        this.asHost(() =>
          postToFunctionUrl(this.eventsUrl, body, {
            maxAttempts: 1,
            attemptTimeoutMs: SPOOLED_TRY_MS,
            signal,
          }),
        ).then(() => undefined),
      log,
    );
  }

  async send<K extends ComputeReport["kind"]>(
    kind: K,
    body: Omit<ReportBody<K>, "kind">,
    /** gives up a report sent directly (a stopping agent's registration) */
    signal?: AbortSignal,
  ): Promise<Sent> {
    const report = computeReport.parse({
      version: 1,
      kind,
      host: this.host,
      sent_at: new Date().toISOString(),
      ...body,
    });
    const json = JSON.stringify(report);
    if (!NOT_SPOOLED.has(kind) && "instance_uuid" in report)
      return this.spool.add(report.instance_uuid, json);
    // Signed as the host's session: compute-events reads who sent it from the signature.
    const post = () =>
      this.asHost(() => postToFunctionUrl(this.eventsUrl, json, { ...DIRECT_RETRIES, signal }));
    if (kind !== "register") return { delivered: Promise.resolve(true), answer: await post() };
    // Registration is tried until compute-events answers, or the agent stops: an agent started
    // during an outage of compute-events comes up as it ends, its spool with it. A refusal (a
    // 4xx other than 429: the host's credentials, its report) ends the start: an operator must look.
    for (;;) {
      try {
        return { delivered: Promise.resolve(true), answer: await post() };
      } catch (e) {
        if (signal?.aborted || (e instanceof FunctionUrlError && !retryableStatus(e.status))) throw e;
        // a line a minute or so for the operator (a wrong events_url looks the same)
        this.log.warn("compute.register_waiting", { error: e, events_url: this.eventsUrl });
      }
    }
  }
}

/** How a step of a move (cold, live, an evacuation or a rebuild) ended on this host, reported and logged. */
export async function reportMoveStep(
  reporter: Pick<Reporter, "send">,
  msg: Pick<ReportBody<"move_step">, "request_id" | "instance_uuid" | "migration_uuid" | "attempt"> & {
    kind: ReportBody<"move_step">["step"];
  },
  outcome: { started: string; ok: boolean; details: string | null; power: PowerState },
  log: Logger,
): Promise<Sent> {
  const { started, ok, details, power } = outcome;
  const sent = await reporter.send("move_step", {
    step: msg.kind,
    request_id: msg.request_id,
    instance_uuid: msg.instance_uuid,
    migration_uuid: msg.migration_uuid,
    attempt: msg.attempt,
    started_at: started,
    ok,
    details,
    power_state: power as 0,
  });
  log.info("compute.move_step_done", { step: msg.kind, ok, power_state: power });
  return sent;
}
