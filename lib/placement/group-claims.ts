// Server group (anti-)affinity's late check, made part of the claim (Nova's
// `_validate_instance_group_policy`, which the destination compute runs under a per-group lock).
// A group with policy affinity or anti-affinity keeps a ledger in the Catalog table: per instance,
// how many allocations it holds on each host (its own and its moves' migration consumers). A claim
// reads the ledger, judges the policy against it, and writes it back in the claim's own
// TransactWriteItems, conditioned on the version it read: two concurrent claims of one group (two
// scheduler containers, a conductor claiming an alternate) cannot both pass on what the other
// has not written yet. Soft policies are weighers and keep no ledger.
//
// Instances are counted, not allocations: a same-host resize or a migration consumer's allocation
// adds to the instance's count on the host, never to the number of members there.
import { GetCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { scanAll } from "../aws/dynamo-pages.js";
import { resources } from "../config.js";

export type { AllocationGroup } from "./types.js";

/** The group a claim is checked against (the scheduler's resolved InstanceGroup). */
export interface ClaimGroup {
  id: string;
  policy: "affinity" | "anti-affinity";
  /** anti-affinity's rule (default 1) */
  max_server_per_host?: number;
}

/** Per instance, per host, how many of its allocations are there. */
export type LedgerMembers = Record<string, Record<string, number>>;

export interface Ledger {
  pk: string;
  /** bumped by every write: the condition that makes a read-judge-write atomic */
  version: number;
  members: LedgerMembers;
}

export const LEDGER_PREFIX = "server_group_ledger#";

/** The group's late check, or none (no group, a soft policy, a group without an id). */
export function claimGroupOf(
  group: { uuid?: string; id?: string; policy: string; rules?: { max_server_per_host?: number } } | undefined,
): ClaimGroup | undefined {
  const id = group?.uuid ?? group?.id;
  if (!group || !id || (group.policy !== "affinity" && group.policy !== "anti-affinity")) return undefined;
  const max = group.rules?.max_server_per_host;
  return { id, policy: group.policy, ...(max !== undefined ? { max_server_per_host: max } : {}) };
}

/**
 * The ledger's key: one item per (group, host) for anti-affinity, so claimers on different hosts
 * never contend; one per group for affinity, whose rule spans the hosts.
 */
export function ledgerKey(group: { id: string; policy: string }, host: string): string {
  return group.policy === "anti-affinity"
    ? `${LEDGER_PREFIX}${group.id}#${host}`
    : `${LEDGER_PREFIX}${group.id}`;
}

/** The hosts where members other than `instance` hold allocations. */
function otherMembersByHost(members: LedgerMembers, instance: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [member, hosts] of Object.entries(members)) {
    if (member === instance) continue;
    for (const [host, n] of Object.entries(hosts))
      if (n > 0) out.set(host, [...(out.get(host) ?? []), member]);
  }
  return out;
}

/**
 * Why `instance` may not be claimed on `host` by the ledger read, or undefined when it may. As
 * Nova: anti-affinity refuses a host where max_server_per_host members other than the instance
 * run; affinity refuses a host other than where the other members run.
 */
export function groupRefusal(
  group: ClaimGroup,
  members: LedgerMembers,
  instance: string,
  host: string,
): string | undefined {
  const others = otherMembersByHost(members, instance);
  const head = `server group ${group.id} policy ${group.policy}`;
  if (group.policy === "anti-affinity") {
    const max = group.max_server_per_host ?? 1;
    const n = others.get(host)?.length ?? 0;
    return n >= max
      ? `${head}: host ${host} already runs ${n} of its members (max_server_per_host ${max})`
      : undefined;
  }
  const elsewhere = [...others.keys()].filter((h) => h !== host).sort();
  return elsewhere.length ? `${head}: its members run on ${elsewhere.join(", ")}, not on ${host}` : undefined;
}

/** The members after `instance` gained (+1) or lost (−1) an allocation on `host`. */
export function withAllocation(
  members: LedgerMembers,
  instance: string,
  host: string,
  delta: 1 | -1,
): LedgerMembers {
  const hosts = { ...(members[instance] ?? {}) };
  const n = (hosts[host] ?? 0) + delta;
  if (n > 0) hosts[host] = n;
  else delete hosts[host];
  const out = { ...members };
  if (Object.keys(hosts).length) out[instance] = hosts;
  else delete out[instance];
  return out;
}

/** A ledger as read (consistent), or an empty one at version 0 when it has no item yet. */
export async function readLedger(pk: string): Promise<Ledger> {
  const r = await dynamo().send(
    new GetCommand({ TableName: resources().catalogTable, Key: { pk }, ConsistentRead: true }),
  );
  const item = r.Item as Ledger | undefined;
  return item ? { pk, version: item.version, members: item.members ?? {} } : { pk, version: 0, members: {} };
}

/**
 * The transaction item that writes `members` over the ledger read at `version` (UpdateItem only:
 * every writer of allocations may UpdateItem the Catalog table).
 */
export function ledgerUpdate(pk: string, version: number, members: LedgerMembers) {
  return {
    Update: {
      TableName: resources().catalogTable,
      Key: { pk },
      UpdateExpression: "SET #m = :m, #v = :next",
      ConditionExpression: version === 0 ? "attribute_not_exists(#v)" : "#v = :v",
      ExpressionAttributeNames: { "#m": "members", "#v": "version" },
      ExpressionAttributeValues: {
        ":m": members,
        ":next": version + 1,
        ...(version ? { ":v": version } : {}),
      },
    },
  };
}

/** The transaction item that bumps a ledger's version without a read (its counts unchanged). */
export function ledgerTouch(pk: string) {
  return {
    Update: {
      TableName: resources().catalogTable,
      Key: { pk },
      UpdateExpression: "ADD #v :one",
      ExpressionAttributeNames: { "#v": "version" },
      ExpressionAttributeValues: { ":one": 1 },
    },
  };
}

/** Every ledger (consistent Scan of the Catalog's ledger items): the audit's read. */
export async function listLedgers(): Promise<Ledger[]> {
  const items = await scanAll<Ledger>({
    TableName: resources().catalogTable,
    ConsistentRead: true,
    FilterExpression: "begins_with(pk, :p)",
    ExpressionAttributeValues: { ":p": LEDGER_PREFIX },
  });
  return items.map((item) => ({ pk: item.pk, version: item.version, members: item.members ?? {} }));
}
