// What SelectDestinations and ClaimAlternate hand to BuildInstances, through the execution's
// state: kept small whatever the request and however long the host names (Nova's are FQDNs of
// up to 255 characters). Each host is written once, with where it is (its node, only when it is
// not named as the host, and its zone); the instances refer to hosts by their index in that
// list. The amounts claimed are the instance's flavor's, read from its record.
import type { BuildRequest } from "./build-request.js";
import type { Destination } from "./common.js";

/** The conductor execution's input: a build request plus the options the intake adds. */
export type ConductorInput = BuildRequest & { config: { max_attempts: number }; scheduled?: Scheduled };

/** A host the selections name, and where it is. */
export interface ScheduledHost {
  host: string;
  /** omitted when the node is named as its host (one node per host, as here) */
  node?: string;
  availability_zone: string;
}

/** One instance's claimed host and its unclaimed alternates, in order: indexes into `hosts`. */
export interface InstanceSelection {
  instance_uuid: string;
  host: number;
  alternates: number[];
}

export interface Scheduled {
  hosts: ScheduledHost[];
  selections: InstanceSelection[];
}

export const NOTHING_SCHEDULED: Scheduled = Object.freeze({ hosts: [], selections: [] });

/** Scheduled, from each instance's destination and alternates. */
export function scheduledOf(
  list: readonly { instance_uuid: string; selected: Destination; alternates: readonly Destination[] }[],
): Scheduled {
  const hosts: ScheduledHost[] = [];
  const index = new Map<string, number>();
  const name = ({ host, nodename, availability_zone }: Destination) => {
    let i = index.get(host);
    if (i === undefined) {
      i =
        hosts.push(
          nodename === host ? { host, availability_zone } : { host, node: nodename, availability_zone },
        ) - 1;
      index.set(host, i);
    }
    return i;
  };
  const selections = list.map((s) => ({
    instance_uuid: s.instance_uuid,
    host: name(s.selected),
    alternates: s.alternates.map(name),
  }));
  return { hosts, selections };
}

/** Host `i` of `scheduled` as a destination. */
export function destinationAt(scheduled: Scheduled, i: number): Destination {
  const h = scheduled.hosts[i];
  if (!h) {
    throw new Error(
      `host #${i} is selected but the scheduler's answer lists ${scheduled.hosts.length} hosts`,
    );
  }
  return { host: h.host, nodename: h.node ?? h.host, availability_zone: h.availability_zone };
}

/** One instance's selection, its hosts named. */
export function selectionIn(
  scheduled: Scheduled,
  sel: InstanceSelection,
): { instance_uuid: string; selected: Destination; alternates: Destination[] } {
  return {
    instance_uuid: sel.instance_uuid,
    selected: destinationAt(scheduled, sel.host),
    alternates: sel.alternates.map((i) => destinationAt(scheduled, i)),
  };
}
