// The uuids Nova gives compute nodes and services from 2.53, for hosts that have only names here:
// name-based (RFC 4122 version 5), so every API container derives the same ones without storing
// them. A path takes the uuid or, as before 2.53, the host name.
import { createHash } from "node:crypto";
import type { HostRecord } from "../placement/types.js";
import { UUID_RE } from "./validation/common.js";

// RFC 4122's URL namespace
const NAMESPACE = Buffer.from("6ba7b8119dad11d180b400c04fd430c8", "hex");

function uuid5(name: string): string {
  const b = createHash("sha1").update(NAMESPACE).update(name, "utf8").digest().subarray(0, 16);
  b[6] = (b[6]! & 0x0f) | 0x50;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const x = b.toString("hex");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/** A host's compute node uuid (os-hypervisors' id from 2.53). */
export const nodeUuid = (host: string): string => uuid5(`novaless:compute-node:${host}`);

/** A host's nova-compute service uuid (os-services' id from 2.53). */
export const serviceUuid = (host: string): string => uuid5(`novaless:compute-service:${host}`);

/** Whether a path id is in the uuid form (else it is a host name). */
export const isUuid = (id: string): boolean => UUID_RE.test(id);

/** The host whose node (or service) has this uuid. */
export function hostByUuid(
  hosts: readonly HostRecord[],
  id: string,
  uuidOf: (host: string) => string,
): HostRecord | undefined {
  const want = id.toLowerCase();
  return hosts.find((h) => uuidOf(h.host) === want);
}
