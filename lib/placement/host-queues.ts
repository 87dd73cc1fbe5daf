// Where a host's casts go: its queue's URL, per warm container. A host's queue does not move (its
// name is a function of the host's, and a registration that makes it again makes the same one), so
// one read of the host's record serves every later cast; a registration seen here refreshes it.
import { getHost } from "./hosts.js";

const queueUrls = new Map<string, string>();

/** The host's queue URL, or undefined when the host has no record (or no queue yet). */
export async function hostQueueUrl(host: string): Promise<string | undefined> {
  const known = queueUrls.get(host);
  if (known) return known;
  const url = (await getHost(host))?.queue_url;
  if (url) queueUrls.set(host, url);
  return url;
}

/** A registration's queue, as compute-events made it. */
export function rememberQueueUrl(host: string, url: string): void {
  queueUrls.set(host, url);
}
