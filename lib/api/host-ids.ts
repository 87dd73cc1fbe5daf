// The ids Nova gives compute nodes and services, for hosts that have only names here: before 2.53
// integers (Nova's table keys), from 2.53 uuids. Both are name-based (RFC 4122 version 5 for the
// uuids, 48 bits of the same hash for the integers: no collision in any real fleet), so every API
// container derives the same ones without storing them. A path takes either, or the host name.
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

function number48(name: string): number {
  return createHash("sha1").update(NAMESPACE).update(name, "utf8").digest().readUIntBE(0, 6);
}

/** A host's compute node id before 2.53 (os-hypervisors' id). */
export const nodeNumber = (host: string): number => number48(`novaless:compute-node:${host}`);

/** A host's nova-compute service id before 2.53 (os-services' id). */
export const serviceNumber = (host: string): number => number48(`novaless:compute-service:${host}`);

/** Whether a path id is an integer id (the pre-2.53 form). */
export const isNumber = (id: string): boolean => /^[0-9]{1,16}$/.test(id);

/** The host whose node (or service) has this integer id. */
export function hostByNumber(
  hosts: readonly HostRecord[],
  id: string,
  numberOf: (host: string) => number,
): HostRecord | undefined {
  const want = Number(id);
  return hosts.find((h) => numberOf(h.host) === want);
}

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
