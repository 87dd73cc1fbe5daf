// Keystone's admin operations on domains, projects, users, roles and role assignments, with its
// rules and its error texts: a name unique in its domain (409), a domain deleted only when
// disabled, a project only when it is a leaf, a user's tokens revoked when it is disabled, its
// password changes or it is deleted, a user's application credentials deleted with the user or
// with its roles on their project. Who may call each is lib/api/identity's business (policy).
import { randomUUID } from "node:crypto";
import { conflict, forbidden, IdentityError, notFound, passwordTooLong, unauthorized } from "./errors.js";
import {
  type DomainInput,
  MAX_PASSWORD_LENGTH,
  type PasswordChange,
  type ProjectInput,
  type RoleInput,
  type UserInput,
} from "./inputs.js";
import { hashPassword, verifyPassword } from "./password.js";
import type { Domain, Project, Role, User } from "./store.js";
import * as store from "./store.js";

/** Keystone's ids: uuid4 hex. */
export const newId = (): string => randomUUID().replaceAll("-", "");

/** What Keystone keeps as "extra": the properties it does not model. */
function extraOf(v: Record<string, unknown>, known: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(Object.entries(v).filter(([k]) => !known.includes(k)));
}

// ---- domains ----------------------------------------------------------------------------------

export async function createDomain(v: DomainInput & { name: string }): Promise<Domain> {
  const domain: Domain = {
    id: v.explicit_domain_id ?? newId(),
    name: v.name,
    description: v.description ?? "",
    enabled: v.enabled ?? true,
  };
  if (!(await store.putIfAbsent("domain", domain.id, domain)))
    throw conflict("domain", `Duplicate entry found with name ${domain.name}`);
  return domain;
}

export async function requireDomain(id: string): Promise<Domain> {
  const d = await store.getDomain(id);
  if (!d) throw notFound("domain", id);
  return d;
}

/** `before` as the route read it (its 404 comes before the body's checks). */
export async function updateDomain(before: Domain, v: DomainInput): Promise<Domain> {
  const after: Domain = {
    ...before,
    name: v.name ?? before.name,
    description: v.description ?? before.description,
    enabled: v.enabled ?? before.enabled,
  };
  if (!(await store.replaceNamed("domain", before, after)))
    throw conflict("domain", `Duplicate entry found with name ${after.name}`);
  return after;
}

/** A disabled domain and everything in it (Keystone deletes its projects and users with it). */
export async function deleteDomain(id: string): Promise<void> {
  const d = await requireDomain(id);
  if (d.enabled) throw forbidden("Cannot delete a domain that is enabled, please disable it first.");
  const projects = (await store.listProjects()).filter((p) => p.domain_id === id);
  // leaves first, so that each delete finds no child
  const depth = (p: Project): number => {
    const parent = projects.find((q) => q.id === p.parent_id);
    return parent ? 1 + depth(parent) : 0;
  };
  for (const p of projects.sort((a, b) => depth(b) - depth(a))) await removeProject(p);
  for (const u of (await store.listUsers()).filter((x) => x.domain_id === id)) await removeUser(u);
  await store.deleteNamed("domain", d);
}

// ---- projects ---------------------------------------------------------------------------------

const PROJECT_FIELDS = [
  "id",
  "name",
  "domain_id",
  "description",
  "enabled",
  "is_domain",
  "parent_id",
  "tags",
  "options",
  "links",
];

/** A new project; `defaultDomainId` is the caller's when the body names none (Keystone's rule). */
export async function createProject(
  v: ProjectInput & { name: string; domain_id?: string; parent_id?: string | null },
  defaultDomainId: string,
): Promise<Project> {
  const domainId = v.domain_id ?? defaultDomainId;
  await requireDomain(domainId);
  const parentId = v.parent_id ?? domainId;
  if (parentId !== domainId) {
    const parent = await store.getProject(parentId);
    if (!parent) throw notFound("project", parentId);
    if (parent.domain_id !== domainId)
      throw forbidden(
        "Cannot create project, since it specifies its domain_id " +
          domainId +
          ", but specifies a parent in a different domain (" +
          parent.domain_id +
          ").",
      );
  }
  const project: Project = {
    id: newId(),
    name: v.name,
    domain_id: domainId,
    description: v.description ?? "",
    enabled: v.enabled ?? true,
    is_domain: false,
    parent_id: parentId,
    tags: v.tags ?? [],
    extra: extraOf(v, PROJECT_FIELDS),
  };
  // the parent's list first: a delete of the parent racing this create sees the child
  if (parentId !== domainId) await store.addChildProject(parentId, project.id);
  if (!(await store.putIfAbsent("project", project.id, project))) {
    if (parentId !== domainId) await store.dropChildProject(parentId, project.id);
    throw conflict(
      "project",
      `it is not permitted to have two projects with either the same name or same id in the same domain: name is ${project.name}, project id ${project.id}`,
    );
  }
  return project;
}

export async function requireProject(id: string): Promise<Project> {
  const p = await store.getProject(id);
  if (!p) throw notFound("project", id);
  return p;
}

/** `before` as the route read it (its 404 comes before the body's checks). */
export async function updateProject(before: Project, v: ProjectInput): Promise<Project> {
  for (const fixed of ["domain_id", "is_domain", "parent_id"] as const)
    if (v[fixed] !== undefined && v[fixed] !== before[fixed])
      throw new IdentityError(400, `Update of \`${fixed}\` is not allowed.`);
  const after: Project = {
    ...before,
    name: v.name ?? before.name,
    description: v.description ?? before.description,
    enabled: v.enabled ?? before.enabled,
    tags: v.tags ?? before.tags ?? [],
    extra: { ...(before.extra ?? {}), ...extraOf(v, PROJECT_FIELDS) },
  };
  if (!(await store.replaceNamed("project", before, after)))
    throw conflict(
      "project",
      `it is not permitted to have two projects with either the same name or same id in the same domain: name is ${after.name}, project id ${after.id}`,
    );
  return after;
}

/**
 * Delete a leaf project with its role assignments and the application credentials on it. Its
 * servers stay (Keystone knows nothing of them; Nova keeps them, and an admin still lists them by
 * the project's id); its tokens stop validating, since their project is gone.
 */
export async function deleteProject(id: string): Promise<void> {
  const project = await requireProject(id);
  if ((await store.childProjectsOf(id)).length)
    throw forbidden(
      `Cannot delete the project ${id} since it is not a leaf in the hierarchy. Use the cascade option if you want to delete a whole subtree.`,
    );
  await removeProject(project);
}

async function removeProject(project: Project): Promise<void> {
  for (const a of await store.assignmentsOn(project.id)) {
    await store.dropAssignment(a.user_id, project.id);
    await dropApplicationCredentials(a.user_id, project.id);
  }
  await store.dropLists("project", project.id);
  await store.deleteNamed("project", project);
  if (project.parent_id !== project.domain_id) await store.dropChildProject(project.parent_id, project.id);
}

// ---- users ------------------------------------------------------------------------------------

const USER_FIELDS = [
  "id",
  "name",
  "domain_id",
  "enabled",
  "password",
  "default_project_id",
  "description",
  "options",
  "federated",
  "links",
  "password_expires_at",
];

export async function createUser(
  v: UserInput & { name: string; domain_id?: string },
  defaultDomainId: string,
): Promise<User> {
  const domainId = v.domain_id ?? defaultDomainId;
  await requireDomain(domainId);
  const user: User = {
    id: newId(),
    name: v.name,
    domain_id: domainId,
    enabled: v.enabled ?? true,
    // a user without a password cannot authenticate by password (Keystone stores none)
    password_hash: v.password == null ? "" : await hashPassword(v.password),
    password_expires_at: null,
    ...(v.default_project_id != null ? { default_project_id: v.default_project_id } : {}),
    ...(v.description !== undefined ? { description: v.description } : {}),
    extra: extraOf(v, USER_FIELDS),
  };
  if (!(await store.putIfAbsent("user", user.id, user)))
    throw conflict("user", `Duplicate entry found with name ${user.name} at domain ID ${domainId}`);
  return user;
}

export async function requireUser(id: string): Promise<User> {
  const u = await store.getUser(id);
  if (!u) throw notFound("user", id);
  return u;
}

/**
 * An admin's update. Disabling the user or setting its password revokes its tokens and, for a
 * disable, deletes its application credentials (Keystone's callbacks on "user disabled").
 */
export async function updateUser(before: User, v: UserInput, now: Date): Promise<User> {
  if (v.domain_id !== undefined && v.domain_id !== before.domain_id)
    throw new IdentityError(400, "Cannot change Domain ID");
  const password = v.password ?? undefined;
  const enabled = v.enabled ?? before.enabled;
  const revoke = password !== undefined || (before.enabled && !enabled);
  const after: User = {
    ...before,
    name: v.name ?? before.name,
    enabled,
    ...(password !== undefined ? { password_hash: await hashPassword(password) } : {}),
    ...(v.default_project_id !== undefined ? { default_project_id: v.default_project_id ?? undefined } : {}),
    ...(v.description !== undefined ? { description: v.description } : {}),
    extra: { ...(before.extra ?? {}), ...extraOf(v, USER_FIELDS) },
    ...(revoke ? { revoked_at: now.toISOString() } : {}),
  };
  if (!(await store.replaceNamed("user", before, after)))
    throw conflict("user", `Duplicate entry found with name ${after.name} at domain ID ${after.domain_id}`);
  if (before.enabled && !enabled) await dropApplicationCredentials(before.id);
  return after;
}

/** The user's own change (POST /v3/users/{id}/password): the original password must match. */
export async function changePassword(id: string, v: PasswordChange, now: Date): Promise<void> {
  const user = await requireUser(id);
  if (!user.enabled || !(await verifyPassword(v.original_password, user.password_hash))) throw unauthorized();
  // the length only once the original password is known good, as Keystone's order
  if (v.password.length > MAX_PASSWORD_LENGTH) throw passwordTooLong(MAX_PASSWORD_LENGTH);
  const after: User = {
    ...user,
    password_hash: await hashPassword(v.password),
    revoked_at: now.toISOString(),
  };
  if (!(await store.replaceNamed("user", user, after))) throw notFound("user", id);
}

/** The projects the user holds a role on (enabled ones): its list, then one batch of reads. */
export async function enabledProjectsOf(userId: string): Promise<Project[]> {
  const ids = (await store.assignmentsOf(userId)).map((a) => a.project_id);
  return (await store.getProjects(ids)).filter((p) => p.enabled);
}

export async function deleteUser(id: string): Promise<void> {
  await removeUser(await requireUser(id));
}

async function removeUser(user: User): Promise<void> {
  for (const a of await store.assignmentsOf(user.id)) await store.dropAssignment(user.id, a.project_id);
  await dropApplicationCredentials(user.id);
  await store.dropLists("user", user.id);
  await store.deleteNamed("user", user);
}

async function dropApplicationCredentials(userId: string, projectId?: string): Promise<void> {
  for (const c of await store.applicationCredentialsOf(userId))
    if (projectId === undefined || c.project_id === projectId) await store.deleteApplicationCredential(c);
}

// ---- roles and assignments --------------------------------------------------------------------

export async function createRole(v: RoleInput): Promise<Role> {
  const role: Role = {
    id: newId(),
    name: v.name,
    domain_id: null,
    description: v.description ?? null,
  };
  if (!(await store.putIfAbsent("role", role.id, role)))
    throw conflict("role", `Duplicate entry found with name ${role.name}`);
  return role;
}

export async function requireRole(id: string): Promise<Role> {
  const r = await store.getRole(id);
  if (!r) throw notFound("role", id);
  return r;
}

/** Delete a role and every grant of it (Keystone deletes the assignments with the role). */
export async function deleteRole(id: string): Promise<void> {
  const role = await requireRole(id);
  for (const a of await store.listAllAssignments())
    if (a.role_ids.includes(id)) await store.revokeRole(a.user_id, a.project_id, id);
  await store.deleteNamed("role", role);
}

/** PUT /v3/projects/{p}/users/{u}/roles/{r}: each must exist (404 naming which). */
export async function grant(projectId: string, userId: string, roleId: string): Promise<void> {
  await requireProject(projectId);
  await requireUser(userId);
  await requireRole(roleId);
  await store.grantRoles(userId, projectId, [roleId]);
}

const assignmentNotFound = (roleId: string, userId: string, projectId: string) =>
  new IdentityError(
    404,
    `Could not find role assignment with role: ${roleId}, user or group: ${userId}, project, domain, or system: ${projectId}.`,
  );

/** DELETE of a grant: its user loses the role there, and its application credentials on that project. */
export async function ungrant(projectId: string, userId: string, roleId: string): Promise<void> {
  await requireProject(projectId);
  await requireUser(userId);
  await requireRole(roleId);
  if (!(await store.revokeRole(userId, projectId, roleId)))
    throw assignmentNotFound(roleId, userId, projectId);
  await dropApplicationCredentials(userId, projectId);
}

/** HEAD/GET of a grant: 204 when held, Keystone's 404 otherwise. */
export async function checkGrant(projectId: string, userId: string, roleId: string): Promise<void> {
  await requireProject(projectId);
  await requireUser(userId);
  await requireRole(roleId);
  const a = await store.getAssignment(userId, projectId);
  if (!a?.role_ids.includes(roleId)) throw assignmentNotFound(roleId, userId, projectId);
}
