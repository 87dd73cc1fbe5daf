// What the e2e files of security groups read of a fake host's port filters and a server's view.
import type { PortFilter } from "../../lib/messages/port-filter.js";
import type { Client } from "./harness.js";

/** The addresses a filter's IPv4 ingress rules admit (each remote group's members, as /32). */
export const admitted = (f: PortFilter | undefined): string[] =>
  (f?.rules ?? [])
    .filter((r) => r.direction === "ingress" && r.ethertype === "IPv4")
    .flatMap((r) => r.remote_ips);

/** A server's first address on the seeded network `public`, as its owner sees it. */
export const publicAddressOf = async (client: Client, id: string): Promise<string> =>
  (await client.get(`/v2.1/servers/${id}`)).body.server.addresses.public[0].addr as string;
