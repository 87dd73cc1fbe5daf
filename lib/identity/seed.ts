// The identity a fresh install starts with, as DevStack's: domain Default, projects admin and demo,
// roles admin/member/reader, user admin (admin + member on admin) and, locally, demo (member on
// demo). Idempotent: what exists is kept, except the admin's password when asked to reset it
// (keystone-manage bootstrap's --bootstrap-password does the same).
import { hashPassword } from "./password.js";
import {
  type Domain,
  getUser,
  indexNames,
  type Project,
  put,
  putAssignment,
  putIfAbsent,
  type Role,
  type User,
} from "./store.js";

export const DEFAULT_DOMAIN: Domain = {
  id: "default",
  name: "Default",
  description: "The default domain",
  enabled: true,
};

// Fixed ids so that tokens, tests and the static token table agree (Nova's data uses "admin"/"demo").
export const ROLES: Role[] = [
  { id: "admin", name: "admin", domain_id: null },
  { id: "member", name: "member", domain_id: null },
  { id: "reader", name: "reader", domain_id: null },
];

function project(id: string, description: string): Project {
  return {
    id,
    name: id,
    domain_id: "default",
    description,
    enabled: true,
    is_domain: false,
    parent_id: "default",
  };
}

export interface SeedIdentityOptions {
  /** the admin's password (locally `admin-secret`; deployed, the AdminPassword secret's) */
  adminPassword: string;
  /** replace a stored admin's password with it (keystone-manage bootstrap does) */
  resetAdminPassword?: boolean;
  /** also create demo / demo-secret (member of project demo): the local runtime's second user */
  demo?: boolean;
}

export async function seedIdentity(opts: SeedIdentityOptions): Promise<{ written: number }> {
  let written = 0;
  const count = (ok: boolean) => {
    if (ok) written++;
  };
  // names of what an older release stored, before anything is looked up by name
  written += await indexNames();
  count(await putIfAbsent("domain", DEFAULT_DOMAIN.id, DEFAULT_DOMAIN));
  for (const r of ROLES) count(await putIfAbsent("role", r.id, r));
  count(
    await putIfAbsent("project", "admin", project("admin", "Bootstrap project for initializing the cloud.")),
  );
  const admin: User = {
    id: "admin",
    name: "admin",
    domain_id: "default",
    enabled: true,
    password_hash: await hashPassword(opts.adminPassword),
    password_expires_at: null,
  };
  if (opts.resetAdminPassword && (await getUser("admin"))) {
    await put("user", admin.id, admin);
    written++;
  } else count(await putIfAbsent("user", admin.id, admin));
  count(
    await putAssignment({ user_id: "admin", project_id: "admin", role_ids: ["admin", "member", "reader"] }),
  );
  if (opts.demo) {
    count(await putIfAbsent("project", "demo", project("demo", "Demo project")));
    const demo: User = {
      id: "demo",
      name: "demo",
      domain_id: "default",
      enabled: true,
      password_hash: await hashPassword("demo-secret"),
      password_expires_at: null,
    };
    count(await putIfAbsent("user", demo.id, demo));
    count(await putAssignment({ user_id: "demo", project_id: "demo", role_ids: ["member", "reader"] }));
  }
  return { written };
}
