// The scheduler Lambda: Nova's select_destinations. The pure pipeline (lib/scheduler) decides;
// this module feeds it host states from Placement and runs the claim loop, because claims are
// I/O. A multi-create is all-or-nothing: its claims are released before NoValidHost.
import { type SchedulerConfig, schedulerConfig } from "../config.js";
import { getInstance } from "../instances/repo.js";
import { log as baseLog, type Logger } from "../log.js";
import { claim, release } from "../placement/claims.js";
import { listHosts } from "../placement/hosts.js";
import { NoValidHost } from "../scheduler/errors.js";
import { summarizeNoValidHost } from "../scheduler/explain.js";
import { filterAndWeigh } from "../scheduler/pipeline.js";
import { resourcesFromFlavor } from "../scheduler/resources.js";
import { consume, orderForClaims, pickAlternates, toSelection } from "../scheduler/select.js";
import type { HostState, RequestSpec, Selection, WeighedHost } from "../scheduler/types.js";
import { toHostState } from "./host-states.js";
import type { ConductorInput, InstanceSelection, Scheduled } from "./types.js";

interface Chosen {
  instance_uuid: string;
  selected: Selection;
  weighed: readonly WeighedHost[];
  /** claimed by this invocation (and so released by it if the request cannot be placed) */
  claimedHere: boolean;
}

export async function selectDestinations(
  req: ConductorInput,
  config: SchedulerConfig = schedulerConfig(),
  random: () => number = Math.random,
): Promise<Scheduled> {
  const n = req.retry.num_attempts;
  const log = baseLog.child({ request_id: req.request_id, attempt: n });
  const spec: RequestSpec = req.request_spec;
  const requested = resourcesFromFlavor(spec.flavor);
  const [records, hostRecords] = await Promise.all([
    Promise.all(req.instance_uuids.map((id) => getInstance(id))),
    listHosts(),
  ]);
  const now = Date.now();
  let candidates: HostState[] = hostRecords.map((h) => toHostState(h, config, now));
  const byName = new Map(candidates.map((h) => [h.host, h]));
  const exclude = new Set(req.retry.hosts);
  const chosen: Chosen[] = [];

  for (const [i, id] of req.instance_uuids.entries()) {
    const rec = records[i];
    if (!rec || rec.deleted || rec.vm_state !== "building" || rec.attempt > n) continue;
    if (rec.attempt === n && rec.host) {
      // A re-run of this step after the placement was recorded: keep it, claim nothing new.
      const h = byName.get(rec.host);
      if (h) consume(h, requested);
      const selected: Selection = h
        ? toSelection(h, requested)
        : {
            host: rec.host,
            nodename: rec.node ?? rec.host,
            availability_zone: rec.availability_zone ?? "",
            resources: requested,
          };
      chosen.push({ instance_uuid: id, selected, weighed: [], claimedHere: false });
      continue;
    }
    const { weighed, explanation } = filterAndWeigh(candidates, spec, {
      index: i,
      config,
      excludeHosts: exclude,
    });
    const conflicts: string[] = [];
    let picked: HostState | undefined;
    for (const w of orderForClaims(weighed, config.host_subset_size, random)) {
      const r = await claim(w.host.host, id, requested, n);
      if (r.claimed) {
        picked = w.host;
        break;
      }
      // Nova's claim loop: a lost race is not an error, try the next best host.
      conflicts.push(r.reason);
    }
    if (!picked) {
      await releaseAll(chosen, n, log);
      const summary = summarizeNoValidHost(explanation, hostRecords.length);
      const details = conflicts.length
        ? `${summary} Claims lost to races: ${conflicts.join("; ")}.`
        : summary;
      log.warn("scheduler.no_valid_host", {
        instance_uuid: id,
        index: i,
        details,
        stages: explanation.stages,
      });
      throw new NoValidHost(details);
    }
    consume(picked, requested);
    chosen.push({ instance_uuid: id, selected: toSelection(picked, requested), weighed, claimedHere: true });
    log.info("scheduler.selected", {
      instance_uuid: id,
      index: i,
      host: picked.host,
      candidates: weighed.length,
      order: explanation.order.slice(0, 5),
    });
    // Nova hands the next instance the hosts that passed for this one.
    candidates = weighed.map((w) => w.host);
  }

  const selectedHosts = new Set([...exclude, ...chosen.map((c) => c.selected.host)]);
  const selections: InstanceSelection[] = chosen.map((c) => ({
    instance_uuid: c.instance_uuid,
    selected: c.selected,
    alternates: pickAlternates(c.weighed, c.selected, config.max_attempts - 1, selectedHosts),
  }));
  return { selections };
}

async function releaseAll(chosen: Chosen[], attempt: number, log: Logger): Promise<void> {
  for (const c of chosen) {
    if (!c.claimedHere) continue;
    await release(c.selected.host, c.instance_uuid, attempt);
    log.info("scheduler.claim_released", { instance_uuid: c.instance_uuid, host: c.selected.host });
  }
}
