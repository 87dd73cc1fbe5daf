// Keystone v3's documents and resource views, and its error shape.
import { createHash } from "node:crypto";
import type { ApplicationCredential, Domain, Project, Role, User } from "../../identity/store.js";
import type { TokenPayload } from "../../identity/token.js";

const UPDATED = "2020-04-07T00:00:00Z";
const MEDIA_TYPES = [{ base: "application/json", type: "application/vnd.openstack.identity-v3+json" }];

function v3(base: string) {
  return {
    id: "v3.14",
    status: "stable",
    updated: UPDATED,
    links: [{ rel: "self", href: `${base}/identity/v3/` }],
    "media-types": MEDIA_TYPES,
  };
}

/** GET /identity: Keystone answers it with 300 Multiple Choices. */
export const versionsDocument = (base: string) => ({ versions: { values: [v3(base)] } });
export const versionDocument = (base: string) => ({ version: v3(base) });

const TITLES = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  409: "Conflict",
} as const;

export function keystoneError(status: keyof typeof TITLES, message: string) {
  return { error: { code: status, title: TITLES[status], message } };
}

/** Keystone's timestamps: microseconds and a Z. */
export const keystoneTime = (iso: string): string =>
  iso.replace(/(\.\d{3})?Z$/, (_m, ms) => `${ms ?? ".000"}000Z`);

const stableId = (s: string): string => createHash("sha256").update(s).digest("hex").slice(0, 32);

/**
 * The service catalog: compute, image, network and identity on this API's own base URL (DevStack's
 * paths), in RegionOne.
 */
export function serviceCatalog(base: string) {
  const services = [
    { type: "compute", name: "nova", url: `${base}/v2.1` },
    { type: "image", name: "glance", url: `${base}/image` },
    { type: "network", name: "neutron", url: `${base}/networking` },
    { type: "identity", name: "keystone", url: `${base}/identity` },
  ];
  return services.map((s) => ({
    endpoints: ["public", "internal", "admin"].map((iface) => ({
      id: stableId(`${s.type}/${iface}`),
      interface: iface,
      region_id: "RegionOne",
      region: "RegionOne",
      url: s.url,
    })),
    id: stableId(s.type),
    type: s.type,
    name: s.name,
  }));
}

export function tokenView(p: TokenPayload, base: string) {
  return {
    token: {
      methods: p.methods,
      ...(p.application_credential ? { application_credential: p.application_credential } : {}),
      user: { ...p.user, password_expires_at: null },
      audit_ids: p.audit_ids,
      expires_at: keystoneTime(p.expires_at),
      issued_at: keystoneTime(p.issued_at),
      ...(p.project
        ? { project: p.project, is_domain: false, roles: p.roles, catalog: serviceCatalog(base) }
        : {}),
    },
  };
}

const link = (base: string, kind: string, id: string) => ({ self: `${base}/identity/v3/${kind}/${id}` });

export const projectView = (p: Project, base: string) => ({
  ...(p.extra ?? {}),
  id: p.id,
  name: p.name,
  domain_id: p.domain_id,
  description: p.description,
  enabled: p.enabled,
  is_domain: p.is_domain,
  parent_id: p.parent_id,
  tags: p.tags ?? [],
  options: {},
  links: link(base, "projects", p.id),
});

export const userView = (u: User, base: string) => ({
  ...(u.extra ?? {}),
  id: u.id,
  name: u.name,
  domain_id: u.domain_id,
  enabled: u.enabled,
  ...(u.default_project_id ? { default_project_id: u.default_project_id } : {}),
  ...(u.description !== undefined ? { description: u.description } : {}),
  password_expires_at: u.password_expires_at,
  options: {},
  links: link(base, "users", u.id),
});

export const roleView = (r: Role, base: string) => ({
  id: r.id,
  name: r.name,
  domain_id: r.domain_id,
  description: r.description ?? null,
  options: {},
  links: link(base, "roles", r.id),
});

export const domainView = (d: Domain, base: string) => ({
  id: d.id,
  name: d.name,
  description: d.description,
  enabled: d.enabled,
  tags: [],
  options: {},
  links: link(base, "domains", d.id),
});

/** A collection answer with Keystone's links block (no paging: the lists are short). */
export function collection(kind: string, items: unknown[], selfUrl: string) {
  return { [kind]: items, links: { self: selfUrl, previous: null, next: null } };
}

export const applicationCredentialView = (
  c: ApplicationCredential & { secret?: string },
  roles: { id: string; name: string }[],
  base: string,
) => ({
  id: c.id,
  name: c.name,
  description: c.description,
  user_id: c.user_id,
  project_id: c.project_id,
  roles: roles.map((r) => ({ ...r, domain_id: null })),
  unrestricted: c.unrestricted,
  expires_at: c.expires_at === null ? null : keystoneTime(c.expires_at),
  access_rules: [],
  ...(c.secret !== undefined ? { secret: c.secret } : {}),
  links: { self: `${base}/identity/v3/users/${c.user_id}/application_credentials/${c.id}` },
});

/**
 * One row of GET /v3/role_assignments: a user's role on a project, with names when asked;
 * `prior` names the role that implies it (an effective listing's implied rows).
 */
export function roleAssignmentView(
  a: {
    user: { id: string; name?: string; domain?: { id: string; name: string } };
    project: { id: string; name?: string; domain?: { id: string; name: string } };
    role: { id: string; name?: string };
    prior?: string;
  },
  base: string,
) {
  const assignment = `${base}/identity/v3/projects/${a.project.id}/users/${a.user.id}/roles/${a.prior ?? a.role.id}`;
  return {
    scope: { project: a.project },
    user: a.user,
    role: a.role,
    links: {
      assignment,
      ...(a.prior ? { prior_role: `${base}/identity/v3/roles/${a.prior}` } : {}),
    },
  };
}
