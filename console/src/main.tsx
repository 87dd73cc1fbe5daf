// novaless's web console at /console: the fleet, the servers, and why each decision was made.
// It talks only to the public API (Identity v3 to sign in, Networking v2 for networks, Compute for
// everything else) with the signed-in user's token, so a member sees what the API shows a member:
// its project's servers, never a host name.
import { type JSX, render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { currentSession, onSessionChange, setSession, signInWithPassword, signInWithToken } from "./api.js";
import { Confirm, type ConfirmRequest, ErrorNote } from "./components.js";
import { useRoute } from "./hooks.js";
import { DryRunView } from "./views/dryrun.js";
import { FleetView, HostView } from "./views/fleet.js";
import { NetworksView, NetworkView } from "./views/networks.js";
import { OperationsView } from "./views/operations.js";
import { ProjectsView } from "./views/projects.js";
import { ServersView, ServerView } from "./views/servers.js";

function SignIn() {
  const [mode, setMode] = useState<"password" | "token">("password");
  const [user, setUser] = useState("");
  const [password, setPassword] = useState("");
  const [project, setProject] = useState("");
  const [token, setToken] = useState("");
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      setSession(
        mode === "password"
          ? await signInWithPassword(user, password, project)
          : await signInWithToken(token),
      );
      if (!location.hash) location.hash = "#/";
    } catch (x) {
      setError((x as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin">
      <h1>novaless</h1>
      <form onSubmit={submit} aria-label="Sign in">
        <fieldset>
          <legend>Sign in with</legend>
          <label class="inline">
            <input
              type="radio"
              name="mode"
              checked={mode === "password"}
              onChange={() => setMode("password")}
            />{" "}
            user and password
          </label>
          <label class="inline">
            <input type="radio" name="mode" checked={mode === "token"} onChange={() => setMode("token")} /> a
            token
          </label>
        </fieldset>
        {mode === "password" ? (
          <>
            <label>
              User
              <input
                name="user"
                autocomplete="username"
                value={user}
                onInput={(e) => setUser(e.currentTarget.value)}
                required
              />
            </label>
            <label>
              Password
              <input
                name="password"
                type="password"
                autocomplete="current-password"
                value={password}
                onInput={(e) => setPassword(e.currentTarget.value)}
                required
              />
            </label>
            <label>
              Project (default: the user's name)
              <input name="project" value={project} onInput={(e) => setProject(e.currentTarget.value)} />
            </label>
          </>
        ) : (
          <label>
            Token
            <input
              name="token"
              type="password"
              value={token}
              onInput={(e) => setToken(e.currentTarget.value)}
              required
            />
          </label>
        )}
        <ErrorNote error={error} />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}

function App() {
  const [session, setS] = useState(currentSession());
  useEffect(() => onSessionChange(() => setS(currentSession())), []);
  const route = useRoute();
  const [confirm, setConfirm] = useState<ConfirmRequest | null>(null);
  if (!session) return <SignIn />;
  const admin = session.admin;
  const [page = admin ? "fleet" : "servers", arg] = route;
  const adminOnly = ["fleet", "hosts", "plan", "operations"].includes(page);
  let view: JSX.Element;
  if (adminOnly && !admin) view = <p role="alert">This page is for administrators.</p>;
  else if (page === "fleet") view = <FleetView />;
  else if (page === "hosts" && arg) view = <HostView name={arg} onConfirm={setConfirm} />;
  else if (page === "servers" && arg) view = <ServerView id={arg} onConfirm={setConfirm} />;
  else if (page === "servers") view = <ServersView />;
  else if (page === "networks" && arg) view = <NetworkView id={arg} />;
  else if (page === "networks") view = <NetworksView />;
  else if (page === "plan") view = <DryRunView />;
  else if (page === "operations") view = <OperationsView onConfirm={setConfirm} />;
  // admins manage every project and user; a member reads its own (the view picks)
  else if (page === "projects") view = <ProjectsView onConfirm={setConfirm} />;
  else view = <p role="alert">No such page.</p>;
  const link = (to: string, label: string) => (
    <a
      href={`#/${to}`}
      aria-current={page === to || (to === "servers" && page === "servers") ? "page" : undefined}
    >
      {label}
    </a>
  );
  return (
    <>
      <header>
        <nav aria-label="Console">
          <strong class="brand">novaless</strong>
          {admin && link("fleet", "Fleet")}
          {link("servers", "Servers")}
          {link("networks", "Networks")}
          {admin && link("plan", "Dry run")}
          {admin && link("operations", "Operations")}
          {link("projects", admin ? "Projects and users" : "Project")}
        </nav>
        <div class="who">
          {session.user} · {session.project} {admin && <span class="badge">admin</span>}{" "}
          <button type="button" onClick={() => setSession(null)}>
            Sign out
          </button>
        </div>
      </header>
      <main>{view}</main>
      <Confirm request={confirm} onDone={() => setConfirm(null)} />
    </>
  );
}

render(<App />, document.getElementById("app")!);
