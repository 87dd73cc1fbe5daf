// What Keystone's request bodies carry once the front has checked them (lib/api/identity/bodies.ts):
// the types the domain operations take. Properties Keystone does not model stay, as its "extra".

export interface DomainInput {
  explicit_domain_id?: string;
  name?: string;
  description?: string | null;
  enabled?: boolean;
}

export interface ProjectInput {
  name?: string;
  domain_id?: unknown;
  parent_id?: unknown;
  is_domain?: unknown;
  description?: string | null;
  enabled?: boolean;
  /** without duplicates */
  tags?: string[];
  [extra: string]: unknown;
}

export interface UserInput {
  name?: string;
  domain_id?: unknown;
  password?: string | null;
  enabled?: boolean;
  description?: string;
  default_project_id?: string | null;
  [extra: string]: unknown;
}

export interface PasswordChange {
  original_password: string;
  password: string;
}

export interface RoleInput {
  name: string;
  description?: string | null;
}

export interface ApplicationCredentialInput {
  name: string;
  secret?: string | null;
  description?: string;
  /** an ISO timestamp */
  expires_at?: string | null;
  /** references to roles by id or name, as given */
  roles?: unknown[];
  unrestricted?: boolean;
}

/** Keystone's [identity] max_password_length. */
export const MAX_PASSWORD_LENGTH = 4096;

/** A domain named by id or by name. */
export type DomainRef = { id: string } | { name: string };
/** A user or project named by id, or by name in its domain. */
export type NamedRef = { id: string } | { name: string; domain: DomainRef };

/** The auth method a token request uses (the first of these its `methods` lists; else none). */
export type Identity =
  | { method: "password"; password: { user: NamedRef & { password: string } } }
  | {
      method: "application_credential";
      application_credential: { secret: string } & ({ id: string } | { name: string; user: NamedRef });
    }
  /** the token's id is the body's, else the request's X-Auth-Token; one that is no string is refused */
  | { method: "token"; token: { id?: unknown } }
  | { method: "other" };

/** The scope a token request asks for: none named (the user's default project), or a project. */
export type ScopeRequest = undefined | "unscoped" | { project: NamedRef };
