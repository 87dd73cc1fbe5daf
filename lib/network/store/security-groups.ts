// Security groups on the networking table (./table.ts): a group and its rules in one item, the
// rules' ids pointing at it, each group's member count and members, and each project's usage
// (Neutron's quota counting), all kept together by conditional transactions.
//
// Items by key:
// - `security_group#<id>` (kind `security_group`): the group, its rules as a map by rule id, and
//   `referrers`: for each group whose rules name this one as remote_group_id, how many rules do.
//   `rules_version` orders changes of its rules (a rule's create is conditioned on it, so two
//   identical rules created at once cannot both pass the duplicate check); `ref_version` orders
//   changes of its referrers (a delete is conditioned on it, so it removes every rule naming it).
// - `sgrule#<rule id>`: which group a rule is in (show and delete by id). No kind.
// - `sgmembers#<group>`: the group's member count (`members`), made and deleted with the group in
//   one transaction and kept by every membership's write in its own: a group's delete is
//   conditioned on 0 (Neutron's SecurityGroupInUse), and a membership on the count being there
//   (the group exists).
// - `sgmember#<group>#<port>` (kind `sgmember#<group>`): one port's membership, with the port's
//   addresses (`addresses`, `addresses_at`: what a remote group rule admits, so a filter reads a
//   group's members' addresses from the index, about 27 members a read unit, instead of every
//   member's port). The by-kind index lists a group's members under that kind (eventually
//   consistent: the fan-out of a change adds the member it knows of, lib/instances/port-filters.ts).
// - `sgusage#<project>`: the project's groups and rules (`groups`, `rules`), counted by every
//   create and delete in its transaction: a create over the quota is refused by its condition.
import { GetCommand, type TransactWriteCommandInput, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../../aws/clients.js";
import { batchGetAll } from "../../aws/dynamo-batch.js";
import { conditionHeld } from "../../aws/dynamo-errors.js";
import { queryAll } from "../../aws/dynamo-pages.js";
import { transactUnlessConditionFails } from "../../aws/dynamo-transact.js";
import { optionValue } from "../../config.js";
import { NETWORKING_BY_KIND_INDEX } from "../../resources.js";
import { NetworkingError } from "../cidr.js";
import {
  defaultGroupId,
  derivedUuid,
  duplicateOf,
  type RuleSpec,
  type SecurityGroup,
  type SecurityGroupRule,
  templateRules,
} from "../security-groups.js";
import { networkingTable } from "./table.js";

type TransactItem = NonNullable<TransactWriteCommandInput["TransactItems"]>[number];

export const groupKey = (id: string) => ({ pk: `security_group#${id}` });
const ruleKey = (id: string) => ({ pk: `sgrule#${id}` });
const countKey = (group: string) => ({ pk: `sgmembers#${group}` });
const memberKey = (group: string, port: string) => ({ pk: `sgmember#${group}#${port}` });
const usageKey = (project: string) => ({ pk: `sgusage#${project}` });
/** The by-kind index's kind a group's memberships are listed under. */
const membersKind = (group: string) => `sgmember#${group}`;

/** The project's limits (Neutron's [quotas] quota_security_group, quota_security_group_rule; -1 unlimited). */
export interface SecurityGroupQuota {
  security_group: number;
  security_group_rule: number;
}

/** The deployment's limits ([quotas] quota_security_group and quota_security_group_rule). */
export const securityGroupQuota = (): SecurityGroupQuota => ({
  security_group: optionValue<number>("neutron_quota_security_group"),
  security_group_rule: optionValue<number>("neutron_quota_security_group_rule"),
});

export const groupNotFound = (id: string) =>
  new NetworkingError(404, "SecurityGroupNotFound", `Security group ${id} does not exist`);
export const ruleNotFound = (id: string) =>
  new NetworkingError(404, "SecurityGroupRuleNotFound", `Security group rule ${id} does not exist`);
const inUse = (id: string) => new NetworkingError(409, "SecurityGroupInUse", `Security Group ${id} in use.`);
/** neutron-lib's OverQuota, its resources as Python prints a sorted list. */
export const overQuota = (resources: string[]) =>
  new NetworkingError(
    409,
    "OverQuota",
    `Quota exceeded for resources: [${[...resources]
      .sort()
      .map((r) => `'${r}'`)
      .join(", ")}].`,
  );

/** A group item as the domain reads it: its rules in order of creation (then id). */
function groupOf(item: Record<string, unknown>): SecurityGroup {
  const rules = Object.values((item.rules ?? {}) as Record<string, SecurityGroupRule>).sort(
    (a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id),
  );
  return {
    id: item.id as string,
    name: item.name as string,
    description: (item.description as string | undefined) ?? "",
    project_id: item.project_id as string,
    is_default: item.is_default === true,
    rules,
    created_at: item.created_at as string,
    updated_at: (item.updated_at as string | undefined) ?? (item.created_at as string),
    revision_number: Number(item.revision_number ?? 0),
  };
}

/** The groups whose rules name this one as their remote group (a referrer whose count is 0 no longer does). */
const referrersOf = (item: Record<string, unknown>) =>
  Object.entries((item.referrers ?? {}) as Record<string, number>)
    .filter(([, n]) => Number(n) > 0)
    .map(([g]) => g);

async function readGroupItem(id: string, consistent = true): Promise<Record<string, unknown> | undefined> {
  const r = await dynamo().send(
    new GetCommand({ TableName: networkingTable(), Key: groupKey(id), ConsistentRead: consistent }),
  );
  return r.Item;
}

/** A group with its rules; undefined when there is none (or `id` is no group's). */
export async function getSecurityGroup(id: string): Promise<SecurityGroup | undefined> {
  const item = await readGroupItem(id);
  return item ? groupOf(item) : undefined;
}

/** Groups by id, those that exist (one eventually consistent BatchGetItem per 100). */
export async function getSecurityGroups(ids: readonly string[]): Promise<Map<string, SecurityGroup>> {
  const unique = [...new Set(ids)];
  const items = await batchGetAll(networkingTable(), unique.map(groupKey));
  return new Map(items.map((i) => [i.id as string, groupOf(i)]));
}

/** Every group (the by-kind index, eventually consistent). */
export async function listSecurityGroups(): Promise<SecurityGroup[]> {
  const items = await queryAll({
    TableName: networkingTable(),
    IndexName: NETWORKING_BY_KIND_INDEX,
    KeyConditionExpression: "#k = :k",
    ExpressionAttributeNames: { "#k": "kind" },
    ExpressionAttributeValues: { ":k": "security_group" },
  });
  return items.map(groupOf);
}

/** The groups whose rules name `id` as their remote group. */
export async function referrersOfGroup(id: string): Promise<string[]> {
  const item = await readGroupItem(id, false);
  return item ? referrersOf(item) : [];
}

/** The ports in a group (the by-kind index: eventually consistent). */
export async function membersOf(groupId: string): Promise<string[]> {
  return (await membersWithAddresses(groupId)).map((m) => m.port_id);
}

/** A group's member, as its membership item holds it. */
export interface Member {
  port_id: string;
  /**
   * the port's addresses when its membership was written or its addresses last changed; absent
   * on a membership from before they were kept (read the port)
   */
  addresses?: string[];
}

/** A group's members with their addresses (the by-kind index: eventually consistent). */
export async function membersWithAddresses(groupId: string): Promise<Member[]> {
  const items = await queryAll({
    TableName: networkingTable(),
    IndexName: NETWORKING_BY_KIND_INDEX,
    KeyConditionExpression: "#k = :k",
    ExpressionAttributeNames: { "#k": "kind" },
    ExpressionAttributeValues: { ":k": membersKind(groupId) },
  });
  return items.map((i) => ({
    port_id: i.port_id as string,
    ...(Array.isArray(i.addresses) ? { addresses: i.addresses as string[] } : {}),
  }));
}

/**
 * A port's new addresses on its memberships (after its fixed_ips changed). Each write is
 * conditioned on being newer than the one there (`at`, taken before the port was read), so of
 * two changes at once the later read's addresses stay; a membership gone meanwhile is skipped.
 */
export async function setMemberAddresses(
  portId: string,
  groups: readonly string[],
  addresses: readonly string[],
  at: number,
): Promise<void> {
  await Promise.all(
    groups.map((g) =>
      // false: the membership is gone, or a later change wrote its addresses already
      conditionHeld(
        dynamo().send(
          new UpdateCommand({
            TableName: networkingTable(),
            Key: memberKey(g, portId),
            UpdateExpression: "SET addresses = :a, addresses_at = :at",
            ConditionExpression:
              "attribute_exists(pk) AND (attribute_not_exists(addresses_at) OR addresses_at < :at)",
            ExpressionAttributeValues: { ":a": [...addresses], ":at": at },
          }),
        ),
      ),
    ),
  );
}

/** How many ports are in a group (its count item; undefined: no such group). */
export async function memberCount(groupId: string): Promise<number | undefined> {
  const r = await dynamo().send(
    new GetCommand({ TableName: networkingTable(), Key: countKey(groupId), ConsistentRead: true }),
  );
  return r.Item ? Number(r.Item.members ?? 0) : undefined;
}

/** A project's groups and rules, as its quota counts them. */
export async function securityGroupUsage(project: string): Promise<{ groups: number; rules: number }> {
  const r = await dynamo().send(
    new GetCommand({ TableName: networkingTable(), Key: usageKey(project), ConsistentRead: true }),
  );
  return { groups: Number(r.Item?.groups ?? 0), rules: Number(r.Item?.rules ?? 0) };
}

/**
 * The usage item's update in a create's transaction: the counts go up, conditioned on staying
 * within the limits given (none: unconditioned, as the default group's create is).
 */
function countUsage(
  project: string,
  groups: number,
  rules: number,
  limits?: SecurityGroupQuota,
): TransactItem {
  const conditions: string[] = [];
  const values: Record<string, unknown> = { ":g": groups, ":r": rules };
  if (limits && groups > 0 && limits.security_group >= 0) {
    conditions.push("(attribute_not_exists(#g) OR #g <= :gmax)");
    values[":gmax"] = limits.security_group - groups;
  }
  if (limits && rules > 0 && limits.security_group_rule >= 0) {
    conditions.push("(attribute_not_exists(#r) OR #r <= :rmax)");
    values[":rmax"] = limits.security_group_rule - rules;
  }
  return {
    Update: {
      TableName: networkingTable(),
      Key: usageKey(project),
      UpdateExpression: "ADD #g :g, #r :r",
      ...(conditions.length ? { ConditionExpression: conditions.join(" AND ") } : {}),
      ExpressionAttributeNames: { "#g": "groups", "#r": "rules" },
      ExpressionAttributeValues: values,
    },
  };
}

/** Which of the limits a create of `groups` and `rules` would pass (Neutron's OverQuota names them). */
async function overLimits(project: string, groups: number, rules: number, limits: SecurityGroupQuota) {
  const used = await securityGroupUsage(project);
  const over: string[] = [];
  if (groups > 0 && limits.security_group >= 0 && used.groups + groups > limits.security_group)
    over.push("security_group");
  if (rules > 0 && limits.security_group_rule >= 0 && used.rules + rules > limits.security_group_rule)
    over.push("security_group_rule");
  return over;
}

/** A group as created: its rules come from Neutron's templates. */
export interface NewSecurityGroup {
  id: string;
  name: string;
  description: string;
  project_id: string;
  /** Neutron's timestamp text */
  now: string;
}

/** A template's rule of a new group: its id derived from the group's, so a repeated create writes the same. */
function templateRule(group: NewSecurityGroup, spec: RuleSpec, i: number): SecurityGroupRule {
  return {
    ...spec,
    id: derivedUuid("novaless-security-group-rule", group.id, String(i)),
    project_id: group.project_id,
    created_at: group.now,
    updated_at: group.now,
    revision_number: 0,
  };
}

/** The writes that make a group, its rules' pointers, its member count and its usage. */
function groupWrites(
  group: NewSecurityGroup,
  isDefault: boolean,
  limits?: SecurityGroupQuota,
): TransactItem[] {
  const rules = templateRules(group.id, isDefault).map((s, i) => templateRule(group, s, i));
  const selfRefs = rules.filter((r) => r.remote_group_id === group.id).length;
  return [
    {
      Put: {
        TableName: networkingTable(),
        Item: {
          ...groupKey(group.id),
          kind: "security_group",
          id: group.id,
          name: group.name,
          description: group.description,
          project_id: group.project_id,
          is_default: isDefault,
          rules: Object.fromEntries(rules.map((r) => [r.id, r])),
          referrers: selfRefs ? { [group.id]: selfRefs } : {},
          rules_version: 0,
          ref_version: 0,
          created_at: group.now,
          updated_at: group.now,
          revision_number: 0,
        },
        ConditionExpression: "attribute_not_exists(pk)",
      },
    },
    {
      Put: {
        TableName: networkingTable(),
        Item: { ...countKey(group.id), members: 0 },
        ConditionExpression: "attribute_not_exists(pk)",
      },
    },
    ...rules.map(
      (r): TransactItem => ({
        Put: { TableName: networkingTable(), Item: { ...ruleKey(r.id), security_group_id: group.id } },
      }),
    ),
    countUsage(group.project_id, 1, rules.length, limits),
  ];
}

/**
 * A new group with Neutron's template rules (egress, IPv4 and IPv6). Neutron's OverQuota (409)
 * when the project has its quota of groups, or of rules for the template's; a group that has the
 * id already is answered as it is (a repeated create).
 */
export async function createSecurityGroup(
  group: NewSecurityGroup,
  limits: SecurityGroupQuota,
): Promise<SecurityGroup> {
  const writes = groupWrites(group, false, limits);
  if (await transactUnlessConditionFails({ TransactItems: writes }))
    return (await getSecurityGroup(group.id))!;
  const made = await getSecurityGroup(group.id);
  if (made) return made;
  const over = await overLimits(group.project_id, 1, templateRules(group.id, false).length, limits);
  if (over.length) throw overQuota(over);
  throw new Error(`security group ${group.id} of project ${group.project_id} could not be created`);
}

/**
 * Default groups this container has seen made, and when (a miss, or a sighting older than
 * KNOWN_DEFAULT_MS, reads the table: an admin may have deleted one, and its next use makes it again).
 */
const knownDefaults = new Map<string, number>();
const KNOWN_DEFAULT_MS = 60_000;

/**
 * The project's `default` group, made on first use with Neutron's default rules (egress; ingress
 * from its own members), exactly once however many first uses run at once: its id is derived
 * from the project, and one conditional transaction makes it. Answers its id. `fresh`: read the
 * table whatever this container saw (a list shows what is there).
 */
export async function ensureDefaultSecurityGroup(
  project: string,
  now: string,
  fresh = false,
): Promise<string> {
  const id = defaultGroupId(project);
  if (!fresh && Date.now() - (knownDefaults.get(id) ?? Number.NEGATIVE_INFINITY) < KNOWN_DEFAULT_MS)
    return id;
  if (!(await readGroupItem(id, false)) && !(await readGroupItem(id))) {
    const group = { id, name: "default", description: "Default security group", project_id: project, now };
    // lost to a concurrent first use: it is there now
    await transactUnlessConditionFails({ TransactItems: groupWrites(group, true) });
  }
  knownDefaults.set(id, Date.now());
  return id;
}

/** A default group the container remembered is gone (an admin deleted it): read it again next time. */
export const forgetDefaultSecurityGroup = (project: string) => knownDefaults.delete(defaultGroupId(project));

/**
 * Change a group's name or description (Neutron's PUT), bumping its revision; undefined when it
 * is gone.
 */
export async function updateSecurityGroup(
  id: string,
  changes: { name?: string; description?: string; updated_at: string },
): Promise<SecurityGroup | undefined> {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = { ":one": 1 };
  const sets = Object.entries(changes).map(([k, v], i) => {
    names[`#a${i}`] = k;
    values[`:a${i}`] = v;
    return `#a${i} = :a${i}`;
  });
  const ok = await transactUnlessConditionFails({
    TransactItems: [
      {
        Update: {
          TableName: networkingTable(),
          Key: groupKey(id),
          UpdateExpression: `SET ${sets.join(", ")} ADD revision_number :one`,
          ConditionExpression: "attribute_exists(pk)",
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        },
      },
    ],
  });
  return ok ? getSecurityGroup(id) : undefined;
}

/** The writes that take a rule out of its group and its project's usage (and off its remote group). */
function ruleRemoval(rule: SecurityGroupRule, group: Record<string, unknown>): TransactItem[] {
  const remote = rule.remote_group_id;
  const self = remote === rule.security_group_id;
  const names: Record<string, string> = { "#id": rule.id };
  const values: Record<string, unknown> = { ":one": 1 };
  let update = "REMOVE #rules.#id";
  if (self) {
    names["#ref"] = "referrers";
    names["#g"] = rule.security_group_id;
    update += " SET #ref.#g = #ref.#g - :one";
  }
  names["#rules"] = "rules";
  const writes: TransactItem[] = [
    {
      Update: {
        TableName: networkingTable(),
        Key: groupKey(rule.security_group_id),
        UpdateExpression: `${update} ADD rules_version :one`,
        ConditionExpression: "attribute_exists(#rules.#id) AND rules_version = :v",
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: { ...values, ":v": Number(group.rules_version ?? 0) },
      },
    },
    { Delete: { TableName: networkingTable(), Key: ruleKey(rule.id) } },
    {
      Update: {
        TableName: networkingTable(),
        Key: usageKey(group.project_id as string),
        UpdateExpression: "ADD #r :minus",
        ExpressionAttributeNames: { "#r": "rules" },
        ExpressionAttributeValues: { ":minus": -1 },
      },
    },
  ];
  if (remote !== null && !self)
    writes.push({
      Update: {
        TableName: networkingTable(),
        Key: groupKey(remote),
        UpdateExpression: "SET #ref.#g = #ref.#g - :one ADD ref_version :one",
        ConditionExpression: "attribute_exists(#ref.#g)",
        ExpressionAttributeNames: { "#ref": "referrers", "#g": rule.security_group_id },
        ExpressionAttributeValues: { ":one": 1 },
      },
    });
  return writes;
}

/** The group a rule is in, by the rule's pointer item (undefined: no such rule). */
async function groupOfRule(ruleId: string): Promise<string | undefined> {
  const r = await dynamo().send(
    new GetCommand({ TableName: networkingTable(), Key: ruleKey(ruleId), ConsistentRead: true }),
  );
  return r.Item?.security_group_id as string | undefined;
}

/** A rule by id, with the group it is in; undefined when there is none. */
export async function getSecurityGroupRule(
  ruleId: string,
): Promise<{ rule: SecurityGroupRule; group: SecurityGroup } | undefined> {
  const groupId = await groupOfRule(ruleId);
  const item = groupId ? await readGroupItem(groupId) : undefined;
  if (!item) return undefined;
  const group = groupOf(item);
  const rule = group.rules.find((r) => r.id === ruleId);
  return rule ? { rule, group } : undefined;
}

/**
 * Delete a rule (Neutron's SecurityGroupRuleNotFound, 404, when there is none); answers it. Its
 * project's usage goes down and its remote group no longer counts it, in the same transaction.
 */
export async function deleteSecurityGroupRule(ruleId: string): Promise<SecurityGroupRule> {
  for (let attempt = 0; ; attempt++) {
    const groupId = await groupOfRule(ruleId);
    const item = groupId ? await readGroupItem(groupId) : undefined;
    const rule = item && groupOf(item).rules.find((r) => r.id === ruleId);
    if (!item || !rule) throw ruleNotFound(ruleId);
    const writes = ruleRemoval(rule, item);
    if (await transactUnlessConditionFails({ TransactItems: writes })) return rule;
    // its remote group went first (its delete takes this rule with it), or the group changed
    if (rule.remote_group_id && rule.remote_group_id !== rule.security_group_id) {
      const remote = await readGroupItem(rule.remote_group_id);
      if (!remote && (await transactUnlessConditionFails({ TransactItems: writes.slice(0, 3) }))) return rule;
    }
    if (attempt >= 8) throw new Error(`security group rule ${ruleId}: its group kept changing`);
  }
}

/**
 * Add a rule to its group: Neutron's SecurityGroupNotFound (404) for a group or remote group that
 * is not there, SecurityGroupRuleExists (409, naming the rule it duplicates) and OverQuota (409)
 * for the project's rules. The duplicate check and the write are one: the write is conditioned on
 * the group's rules as they were read. Idempotent by rule id: a rule already there is answered.
 */
export async function addSecurityGroupRule(
  rule: SecurityGroupRule,
  limits: SecurityGroupQuota,
): Promise<SecurityGroupRule> {
  const groupId = rule.security_group_id;
  const remote = rule.remote_group_id;
  const self = remote === groupId;
  for (let attempt = 0; ; attempt++) {
    const item = await readGroupItem(groupId);
    if (!item) throw groupNotFound(groupId);
    const group = groupOf(item);
    const had = group.rules.find((r) => r.id === rule.id);
    if (had) return had;
    const dup = duplicateOf(rule, group.rules);
    if (dup)
      throw new NetworkingError(
        409,
        "SecurityGroupRuleExists",
        `Security group rule already exists. Rule id is ${dup.id}.`,
      );
    const names: Record<string, string> = { "#rules": "rules", "#id": rule.id };
    const values: Record<string, unknown> = {
      ":rule": rule,
      ":one": 1,
      ":v": Number(item.rules_version ?? 0),
    };
    let update = "SET #rules.#id = :rule";
    if (self) {
      names["#ref"] = "referrers";
      names["#g"] = groupId;
      values[":zero"] = 0;
      update += ", #ref.#g = if_not_exists(#ref.#g, :zero) + :one";
    }
    const writes: TransactItem[] = [
      {
        Update: {
          TableName: networkingTable(),
          Key: groupKey(groupId),
          UpdateExpression: `${update} ADD rules_version :one${self ? ", ref_version :one" : ""}`,
          ConditionExpression: "attribute_exists(pk) AND rules_version = :v",
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        },
      },
      {
        Put: {
          TableName: networkingTable(),
          Item: { ...ruleKey(rule.id), security_group_id: groupId },
          ConditionExpression: "attribute_not_exists(pk)",
        },
      },
      countUsage(group.project_id, 0, 1, limits),
    ];
    if (remote !== null && !self)
      writes.push({
        Update: {
          TableName: networkingTable(),
          Key: groupKey(remote),
          UpdateExpression: "SET #ref.#g = if_not_exists(#ref.#g, :zero) + :one ADD ref_version :one",
          ConditionExpression: "attribute_exists(pk)",
          ExpressionAttributeNames: { "#ref": "referrers", "#g": groupId },
          ExpressionAttributeValues: { ":zero": 0, ":one": 1 },
        },
      });
    if (await transactUnlessConditionFails({ TransactItems: writes })) return rule;
    if (remote !== null && !self && !(await readGroupItem(remote))) throw groupNotFound(remote);
    const over = await overLimits(group.project_id, 0, 1, limits);
    if (over.length) throw overQuota(over);
    if (attempt >= 8) throw new Error(`security group ${groupId}: its rules kept changing`);
  }
}

/** What a group's delete took with it: the rules of other groups that named it as their remote. */
export interface DeletedGroup {
  group: SecurityGroup;
  /** the groups that lost a rule naming it (their members' filters change) */
  referrers: string[];
}

/**
 * Delete a group: Neutron's SecurityGroupInUse (409) while a port is in it; undefined when it is
 * not there. Its rules, its member count and its usage go in one transaction conditioned on no
 * member and on no rule having named it since it was read; then the rules of other groups that
 * name it as remote go too (Neutron's foreign key cascade), and its rules' pointers.
 */
export async function deleteSecurityGroup(id: string): Promise<DeletedGroup | undefined> {
  for (let attempt = 0; ; attempt++) {
    const item = await readGroupItem(id);
    if (!item) return undefined;
    const group = groupOf(item);
    if (((await memberCount(id)) ?? 0) > 0) throw inUse(id);
    const ok = await transactUnlessConditionFails({
      TransactItems: [
        {
          Delete: {
            TableName: networkingTable(),
            Key: groupKey(id),
            ConditionExpression: "ref_version = :rv",
            ExpressionAttributeValues: { ":rv": Number(item.ref_version ?? 0) },
          },
        },
        {
          Delete: {
            TableName: networkingTable(),
            Key: countKey(id),
            ConditionExpression: "attribute_not_exists(members) OR members = :zero",
            ExpressionAttributeValues: { ":zero": 0 },
          },
        },
        {
          Update: {
            TableName: networkingTable(),
            Key: usageKey(group.project_id),
            UpdateExpression: "ADD #g :g, #r :r",
            ExpressionAttributeNames: { "#g": "groups", "#r": "rules" },
            ExpressionAttributeValues: { ":g": -1, ":r": -group.rules.length },
          },
        },
      ],
    });
    if (!ok) {
      if (((await memberCount(id)) ?? 0) > 0) throw inUse(id);
      if (attempt >= 8) throw new Error(`security group ${id}: it kept changing`);
      continue;
    }
    if (group.is_default) forgetDefaultSecurityGroup(group.project_id);
    const referrers = referrersOf(item).filter((g) => g !== id);
    for (const other of referrers) {
      const o = await getSecurityGroup(other);
      for (const r of o?.rules ?? []) {
        if (r.remote_group_id !== id) continue;
        await deleteSecurityGroupRule(r.id).catch((e) => {
          if (!(e instanceof NetworkingError && e.type === "SecurityGroupRuleNotFound")) throw e;
        });
      }
    }
    await Promise.all(
      group.rules.map((r) =>
        transactUnlessConditionFails({
          TransactItems: [
            {
              Delete: {
                TableName: networkingTable(),
                Key: ruleKey(r.id),
                ConditionExpression: "security_group_id = :g",
                ExpressionAttributeValues: { ":g": id },
              },
            },
          ],
        }),
      ),
    );
    return { group, referrers };
  }
}

/**
 * The writes that put a port in groups (its membership items, each group's count, conditioned on
 * the group being there) or take it out of them, for the port's own transaction.
 */
export function membershipWrites(
  portId: string,
  join: readonly string[],
  leave: readonly string[],
  /** the port's addresses, kept on the memberships it joins (see the file's header) */
  addresses: readonly string[] = [],
): TransactItem[] {
  const at = Date.now();
  const count = (group: string, by: number): TransactItem => ({
    Update: {
      TableName: networkingTable(),
      Key: countKey(group),
      UpdateExpression: "ADD members :by",
      ConditionExpression: "attribute_exists(pk)",
      ExpressionAttributeValues: { ":by": by },
    },
  });
  return [
    ...join.flatMap((g): TransactItem[] => [
      {
        Put: {
          TableName: networkingTable(),
          Item: {
            ...memberKey(g, portId),
            kind: membersKind(g),
            port_id: portId,
            addresses: [...addresses],
            addresses_at: at,
          },
          ConditionExpression: "attribute_not_exists(pk)",
        },
      },
      count(g, 1),
    ]),
    ...leave.flatMap((g): TransactItem[] => [
      {
        Delete: {
          TableName: networkingTable(),
          Key: memberKey(g, portId),
          ConditionExpression: "attribute_exists(pk)",
        },
      },
      count(g, -1),
    ]),
  ];
}

/** Of these groups, those that are not there (a port's transaction failed on one of them). */
export async function missingGroups(ids: readonly string[]): Promise<string[]> {
  const found = await batchGetAll(networkingTable(), ids.map(countKey), { ConsistentRead: true });
  const there = new Set(found.map((f) => String(f.pk).slice("sgmembers#".length)));
  return ids.filter((id) => !there.has(id));
}
