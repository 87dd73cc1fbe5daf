// What SelectDestinations and ClaimAlternate hand to BuildInstances, through the execution's
// state: kept small whatever the request. Each instance names its hosts; where a host is (its
// node and zone) is written once, however many instances go there; the amounts claimed are the
// instance's flavor's, read from its record.
import type { Destination } from "../messages/common.js";

/** One instance's claimed host and its unclaimed alternates, in order. */
export interface InstanceSelection {
  instance_uuid: string;
  host: string;
  alternates: string[];
}

export interface Scheduled {
  selections: InstanceSelection[];
  /** every host the selections name → its node and zone */
  destinations: Record<string, Omit<Destination, "host">>;
}

export const NOTHING_SCHEDULED: Scheduled = Object.freeze({ selections: [], destinations: {} });

/** Scheduled, from each instance's destination and alternates. */
export function scheduledOf(
  list: readonly { instance_uuid: string; selected: Destination; alternates: readonly Destination[] }[],
): Scheduled {
  const destinations: Scheduled["destinations"] = {};
  const name = ({ host, nodename, availability_zone }: Destination) => {
    destinations[host] = { nodename, availability_zone };
    return host;
  };
  const selections = list.map((s) => ({
    instance_uuid: s.instance_uuid,
    host: name(s.selected),
    alternates: s.alternates.map(name),
  }));
  return { selections, destinations };
}

/** A host of `scheduled` as a destination. */
export function destinationIn(scheduled: Scheduled, host: string): Destination {
  const d = scheduled.destinations[host];
  if (!d) throw new Error(`host ${host} is selected but has no destination in the scheduler's answer`);
  return { host, ...d };
}
