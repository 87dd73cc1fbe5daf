// Projects and users, through Keystone v3's own API. An admin lists every project and user,
// creates them (a new user gets a role on its default project at once), disables or enables them
// and assigns or removes a user's roles on a project; each change asks first or is a form's
// submit. A member (Keystone's default policy lets it read only itself) sees its own projects
// (GET /v3/auth/projects) and its own user, with nothing to change.
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { currentSession, get, patch, post, put, request } from "../api.js";
import { Badge, type ConfirmRequest, ErrorNote } from "../components.js";
import { useLoad } from "../hooks.js";
import { roleChoices, rolesByScope, type ScopedRoles } from "../model.js";
import type { Project, Role, RoleAssignment, User } from "../types.js";

type Ask = (r: ConfirmRequest) => void;

const V3 = "/identity/v3";
const byName = <T extends { name: string }>(xs: T[]) => [...xs].sort((a, b) => a.name.localeCompare(b.name));
const roleOnProject = (project: string, user: string, role: string) =>
  `${V3}/projects/${encodeURIComponent(project)}/users/${encodeURIComponent(user)}/roles/${encodeURIComponent(role)}`;

/** An admin's changes: each asks first, then the page's data is read again. */
interface Manage {
  ask: Ask;
}

function EnabledCell({ enabled }: { enabled: boolean }) {
  return (
    <td>
      <Badge value={enabled ? "enabled" : "disabled"} />
    </td>
  );
}

function ProjectsTable({ projects, manage }: { projects: Project[]; manage?: Manage }) {
  const session = currentSession()!;
  const toggle = (p: Project): ConfirmRequest =>
    p.enabled
      ? {
          title: `Disable project ${p.name}?`,
          text: `Tokens scoped to ${p.name} stop working, and no one can sign in to it until it is enabled again. Its servers keep running; its users and role assignments are kept.${p.id === session.projectId ? " This session's token is one of them: you are signed out." : ""}`,
          confirm: "Disable",
          run: () => patch(`${V3}/projects/${encodeURIComponent(p.id)}`, { project: { enabled: false } }),
        }
      : {
          title: `Enable project ${p.name}?`,
          text: `Its users can sign in to ${p.name} again.`,
          confirm: "Enable",
          run: () => patch(`${V3}/projects/${encodeURIComponent(p.id)}`, { project: { enabled: true } }),
        };
  if (!projects.length) return <p>No projects.</p>;
  return (
    <table aria-label="Projects" data-testid="projects-table">
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">ID</th>
          <th scope="col">Domain</th>
          <th scope="col">Enabled</th>
          <th scope="col">Description</th>
          {manage && <th scope="col">Actions</th>}
        </tr>
      </thead>
      <tbody>
        {projects.map((p) => (
          <tr key={p.id} data-project={p.name} data-enabled={String(p.enabled)}>
            <th scope="row">{p.name}</th>
            <td>
              <code>{p.id}</code>
            </td>
            <td>{p.domain_id}</td>
            <EnabledCell enabled={p.enabled} />
            <td>{p.description ?? ""}</td>
            {manage && <ToggleCell enabled={p.enabled} onToggle={() => manage.ask(toggle(p))} />}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Disable or enable a project or a user (the caller's confirmation says what it does). */
function ToggleCell({ enabled, onToggle }: { enabled: boolean; onToggle: () => void }) {
  return (
    <td>
      <button type="button" data-action={enabled ? "disable" : "enable"} onClick={onToggle}>
        {enabled ? "Disable" : "Enable"}
      </button>
    </td>
  );
}

function RolesCell({ user, roles, manage }: { user: User; roles: ScopedRoles[]; manage?: Manage }) {
  const remove = (r: ScopedRoles, role: string): ConfirmRequest => ({
    title: `Remove ${role} from ${user.name} on ${r.name}?`,
    text: `${user.name} no longer holds ${role} on ${r.name}; its other roles there stay.`,
    confirm: "Remove",
    run: () => request("DELETE", roleOnProject(r.id, user.id, role)),
  });
  return (
    <td data-testid="user-roles">
      {roles.length === 0 && "none"}
      <ul class="plain">
        {roles.map((r) => (
          <li key={`${r.scope}/${r.id}`} data-scope={r.scope} data-target={r.name}>
            {r.scope === "project" ? "" : `${r.scope} `}
            {r.name}:{" "}
            {r.roles.map((role) => (
              <span key={role} class="role" data-role={role}>
                {role}
                {manage && r.scope === "project" && (
                  <button
                    type="button"
                    class="small"
                    data-action="remove-role"
                    aria-label={`Remove ${role} from ${user.name} on ${r.name}`}
                    onClick={() => manage.ask(remove(r, role))}
                  >
                    ×
                  </button>
                )}
              </span>
            ))}
          </li>
        ))}
      </ul>
    </td>
  );
}

function UsersTable({
  users,
  projects,
  roles,
  manage,
}: {
  users: User[];
  projects: Project[];
  /** each user's role assignments (admins) */
  roles?: Map<string, ScopedRoles[]>;
  manage?: Manage;
}) {
  const session = currentSession()!;
  const projectName = (id: string | null | undefined) =>
    id ? (projects.find((p) => p.id === id)?.name ?? id) : "none";
  const toggle = (u: User): ConfirmRequest =>
    u.enabled
      ? {
          title: `Disable user ${u.name}?`,
          text: `${u.name} can no longer sign in, and the tokens it holds stop working. Its role assignments are kept and its servers keep running.${u.id === session.userId ? " That is you: you are signed out." : ""}`,
          confirm: "Disable",
          run: () => patch(`${V3}/users/${encodeURIComponent(u.id)}`, { user: { enabled: false } }),
        }
      : {
          title: `Enable user ${u.name}?`,
          text: `${u.name} can sign in again, with new tokens: those it held when it was disabled stay revoked.`,
          confirm: "Enable",
          run: () => patch(`${V3}/users/${encodeURIComponent(u.id)}`, { user: { enabled: true } }),
        };
  return (
    <table aria-label="Users" data-testid="users-table">
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">ID</th>
          <th scope="col">Default project</th>
          <th scope="col">Enabled</th>
          {roles && <th scope="col">Roles</th>}
          {manage && <th scope="col">Actions</th>}
        </tr>
      </thead>
      <tbody>
        {users.map((u) => (
          <tr key={u.id} data-user={u.name} data-enabled={String(u.enabled)}>
            <th scope="row">{u.name}</th>
            <td>
              <code>{u.id}</code>
            </td>
            <td>{projectName(u.default_project_id)}</td>
            <EnabledCell enabled={u.enabled} />
            {roles && <RolesCell user={u} roles={roles.get(u.id) ?? []} manage={manage} />}
            {manage && <ToggleCell enabled={u.enabled} onToggle={() => manage.ask(toggle(u))} />}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** A form whose submit calls the API: busy while it runs, the API's refusal shown under it. */
function ApiForm({
  label,
  submit,
  run,
  children,
}: {
  label: string;
  submit: string;
  /** resolves once done (the form then clears itself) */
  run: () => Promise<void>;
  children: ComponentChildren;
}) {
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const onSubmit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await run();
    } catch (x) {
      setError((x as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="controls" aria-label={label} onSubmit={onSubmit}>
      {children}
      <button type="submit" disabled={busy}>
        {submit}
      </button>
      <ErrorNote error={error} />
    </form>
  );
}

function Select({
  name,
  label,
  value,
  options,
  onChange,
}: {
  name: string;
  label: string;
  value: string;
  options: { value: string; label: string }[];
  onChange: (v: string) => void;
}) {
  return (
    <label>
      {label}
      <select
        name={name}
        // nothing picked yet: the first option, as the form's submit takes it
        value={options.some((o) => o.value === value) ? value : options[0]?.value}
        onChange={(e) => onChange(e.currentTarget.value)}
      >
        {options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
    </label>
  );
}

const projectOptions = (ps: Project[]) => ps.map((p) => ({ value: p.id, label: p.name }));
const roleOptions = (rs: Role[]) => rs.map((r) => ({ value: r.id, label: r.name }));

function NewProject({ done }: { done: () => void }) {
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  return (
    <ApiForm
      label="New project"
      submit="Create project"
      run={async () => {
        await post(`${V3}/projects`, { project: { name, description, domain_id: "default", enabled: true } });
        setName("");
        setDescription("");
        done();
      }}
    >
      <label>
        Name
        <input name="name" value={name} onInput={(e) => setName(e.currentTarget.value)} required />
      </label>
      <label>
        Description
        <input
          name="description"
          value={description}
          onInput={(e) => setDescription(e.currentTarget.value)}
        />
      </label>
    </ApiForm>
  );
}

function NewUser({ projects, roles, done }: { projects: Project[]; roles: Role[]; done: () => void }) {
  const [name, setName] = useState("");
  const [password, setPassword] = useState("");
  const [project, setProject] = useState("");
  const [role, setRole] = useState("");
  return (
    <ApiForm
      label="New user"
      submit="Create user"
      run={async () => {
        const { user } = await post<{ user: User }>(`${V3}/users`, {
          user: {
            name,
            password,
            domain_id: "default",
            enabled: true,
            ...(project ? { default_project_id: project } : {}),
          },
        });
        setName("");
        setPassword("");
        // a default project gives no role in Keystone: the role is its own call
        const give = role || roles[0]?.id;
        try {
          if (project && give) await put(roleOnProject(project, user.id, give), undefined);
        } catch (x) {
          throw new Error(`${user.name} was created, but not given ${give}: ${(x as Error).message}`);
        } finally {
          done();
        }
      }}
    >
      <label>
        Name
        <input name="name" value={name} onInput={(e) => setName(e.currentTarget.value)} required />
      </label>
      <label>
        Password
        <input
          name="password"
          type="password"
          autocomplete="new-password"
          value={password}
          onInput={(e) => setPassword(e.currentTarget.value)}
          required
        />
      </label>
      <Select
        name="project"
        label="Default project"
        value={project}
        options={[{ value: "", label: "none" }, ...projectOptions(projects)]}
        onChange={setProject}
      />
      <Select name="role" label="Role there" value={role} options={roleOptions(roles)} onChange={setRole} />
    </ApiForm>
  );
}

function AssignRole({
  users,
  projects,
  roles,
  done,
}: {
  users: User[];
  projects: Project[];
  roles: Role[];
  done: () => void;
}) {
  const [user, setUser] = useState("");
  const [project, setProject] = useState("");
  const [role, setRole] = useState("");
  return (
    <ApiForm
      label="Assign a role"
      submit="Assign"
      run={async () => {
        await put(
          roleOnProject(project || projects[0]!.id, user || users[0]!.id, role || roles[0]!.id),
          undefined,
        );
        done();
      }}
    >
      <Select
        name="user"
        label="User"
        value={user}
        options={users.map((u) => ({ value: u.id, label: u.name }))}
        onChange={setUser}
      />
      <Select
        name="project"
        label="Project"
        value={project}
        options={projectOptions(projects)}
        onChange={setProject}
      />
      <Select name="role" label="Role" value={role} options={roleOptions(roles)} onChange={setRole} />
    </ApiForm>
  );
}

function AdminView({ onConfirm }: { onConfirm: Ask }) {
  const { data, error, reload } = useLoad(async () => {
    const [p, u, r] = await Promise.all([
      get<{ projects: Project[] }>(`${V3}/projects`),
      get<{ users: User[] }>(`${V3}/users`),
      get<{ roles: Role[] }>(`${V3}/roles`),
    ]);
    const users = byName(u.users);
    const assignments = await Promise.all(
      users.map((x) =>
        get<{ role_assignments: RoleAssignment[] }>(
          `${V3}/role_assignments?user.id=${encodeURIComponent(x.id)}&include_names`,
        ),
      ),
    );
    return {
      projects: byName(p.projects),
      users,
      roles: roleChoices(r.roles),
      assignments: new Map(users.map((x, i) => [x.id, rolesByScope(assignments[i]!.role_assignments)])),
    };
  });
  const manage: Manage = {
    ask: (r) =>
      onConfirm({
        ...r,
        run: async (x, c) => {
          await r.run(x, c);
          reload();
        },
      }),
  };
  return (
    <div>
      <h1>Projects and users</h1>
      <ErrorNote error={error} />
      {!data ? (
        <p>Loading…</p>
      ) : (
        <>
          <section aria-labelledby="projects-title">
            <h2 id="projects-title">Projects</h2>
            <ProjectsTable projects={data.projects} manage={manage} />
            <NewProject done={reload} />
          </section>
          <section aria-labelledby="users-title">
            <h2 id="users-title">Users</h2>
            <UsersTable
              users={data.users}
              projects={data.projects}
              roles={data.assignments}
              manage={manage}
            />
            <NewUser projects={data.projects} roles={data.roles} done={reload} />
            <h3>Assign a role</h3>
            <AssignRole users={data.users} projects={data.projects} roles={data.roles} done={reload} />
          </section>
        </>
      )}
    </div>
  );
}

function MemberView() {
  const session = currentSession()!;
  const { data, error } = useLoad(async () => {
    const [p, u] = await Promise.all([
      get<{ projects: Project[] }>(`${V3}/auth/projects`),
      get<{ user: User }>(`${V3}/users/${encodeURIComponent(session.userId)}`),
    ]);
    return { projects: byName(p.projects), user: u.user };
  });
  return (
    <div>
      <h1>Your project</h1>
      <ErrorNote error={error} />
      {!data ? (
        <p>Loading…</p>
      ) : (
        <>
          <section aria-labelledby="projects-title">
            <h2 id="projects-title">Projects you hold a role on</h2>
            <ProjectsTable projects={data.projects} />
          </section>
          <section aria-labelledby="users-title">
            <h2 id="users-title">You</h2>
            <UsersTable users={[data.user]} projects={data.projects} />
          </section>
          <p class="note">An administrator creates projects and users and assigns roles.</p>
        </>
      )}
    </div>
  );
}

export function ProjectsView({ onConfirm }: { onConfirm: Ask }) {
  return currentSession()?.admin ? <AdminView onConfirm={onConfirm} /> : <MemberView />;
}
