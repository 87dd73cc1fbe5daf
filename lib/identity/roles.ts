// Keystone's default role implications (keystone-manage bootstrap makes them): admin implies
// member, member implies reader. A token carries its roles with the implied ones, and an
// effective role assignment listing shows them, so a policy asks for `reader` and a member passes.
// Pure: no I/O.

/** prior role → the roles it implies directly */
export const IMPLIED_ROLES: Readonly<Record<string, readonly string[]>> = {
  admin: ["member"],
  member: ["reader"],
};

/** The role ids with every role they imply, transitively, in first-seen order. */
export function withImplied(roleIds: Iterable<string>): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const visit = (id: string) => {
    if (seen.has(id)) return;
    seen.add(id);
    out.push(id);
    for (const next of IMPLIED_ROLES[id] ?? []) visit(next);
  };
  for (const id of roleIds) visit(id);
  return out;
}

/** For each role a set implies but does not hold directly, the prior role that implies it directly. */
export function impliedBy(roleIds: Iterable<string>): Map<string, string> {
  const direct = new Set(roleIds);
  const out = new Map<string, string>();
  const visit = (prior: string) => {
    for (const implied of IMPLIED_ROLES[prior] ?? []) {
      if (direct.has(implied) || out.has(implied)) continue;
      out.set(implied, prior);
      visit(implied);
    }
  };
  for (const prior of direct) visit(prior);
  return out;
}
