// The machine's fully qualified name, the default of [DEFAULT] host: the host name, and when it
// has no domain, the name its address resolves back to (what `hostname -f` prints).
import { lookup, lookupService } from "node:dns/promises";
import { hostname } from "node:os";

export async function fqdn(name = hostname()): Promise<string> {
  if (name.includes(".")) return name;
  try {
    const { address } = await lookup(name);
    const { hostname: full } = await lookupService(address, 22);
    return full.startsWith(`${name}.`) ? full : name;
  } catch {
    return name;
  }
}
