// A server's actions: one table, each entry Nova's name for it (the button's data-action), when
// Nova lets it run (compute/api.py's check_instance_state and the policy's admin rules), and the
// confirmation that says what happens to the server and its claim. The buttons are the entries
// valid in the server's current status, each asking first.
import { post, request } from "../api.js";
import type { ConfirmRequest } from "../components.js";
import { usePoll } from "../hooks.js";
import type { Flavor, Image, Server, Service } from "../types.js";

interface Context {
  admin: boolean;
  flavors: Flavor[];
  images: Image[];
  /** compute hosts to move or unshelve to: enabled and up, not the server's own (admins) */
  destinations: { value: string; label: string }[];
}

interface ServerAction {
  /** Nova's action name, as in the request body: the button's data-action */
  action: string;
  label: string;
  /** the server's status (and the caller's role) lets it run */
  when: (s: Server, admin: boolean) => boolean;
  /** what it picks from has been read */
  ready?: (c: Context) => boolean;
  ask: (s: Server, c: Context) => ConfirmRequest;
}

const serverAction = (id: string, body: unknown) => post(`/v2.1/servers/${id}/action`, body);

/** In one of these statuses with no task in progress: Nova's check_instance_state(task_state=None). */
const idleIn =
  (...statuses: string[]) =>
  (s: Server) =>
    statuses.includes(s.status) && !s["OS-EXT-STS:task_state"];
const adminOnly =
  (when: (s: Server) => boolean) =>
  (s: Server, admin: boolean): boolean =>
    admin && when(s);

/** Nova lets a server move (resize, migrate) only when ACTIVE or SHUTOFF with no task in progress. */
const canMove = idleIn("ACTIVE", "SHUTOFF");
/** Nova's snapshot, backup and shelve: ACTIVE, SHUTOFF, PAUSED or SUSPENDED, no task. */
const canShelve = idleIn("ACTIVE", "SHUTOFF", "PAUSED", "SUSPENDED");
const hostOf = (s: Server) => s["OS-EXT-SRV-ATTR:host"] ?? "its host";

/**
 * os-migrateLive at 2.30, before 2.34: the API answers the conductor's checks and scheduling, so a
 * refusal (no valid host, a driver that cannot move live) shows in the dialog rather than later as
 * a migration in error; a named host is checked by the scheduler, not forced.
 */
const liveMigrate = (id: string, host: string) =>
  request(
    "POST",
    `/v2.1/servers/${id}/action`,
    { "os-migrateLive": { host: host || null, block_migration: "auto" } },
    { headers: { "openstack-api-version": "compute 2.30" } },
  );

/** createBackup's type and rotation, picked together (the dialog has one list). */
const BACKUPS = [
  { value: "daily:7", label: "daily, keeping the newest 7" },
  { value: "weekly:4", label: "weekly, keeping the newest 4" },
  { value: "daily:1", label: "daily, keeping only this one" },
];

export const SERVER_ACTIONS: readonly ServerAction[] = [
  {
    action: "resize",
    label: "Resize…",
    when: canMove,
    ready: (c) => c.flavors.length > 0,
    ask: (s, { flavors }) => {
      const current = s.flavor?.original_name;
      return {
        title: `Resize ${s.name}?`,
        text: `The scheduler finds a host that fits the new flavor; the server stops, moves there, and waits as VERIFY_RESIZE for you to confirm or revert. It has ${current ?? "its flavor"} now.`,
        choice: {
          label: "New flavor",
          options: flavors.map((f) => ({
            value: f.id,
            label: `${f.name}${f.vcpus !== undefined ? ` (${f.vcpus} vCPU, ${f.ram} MB, ${f.disk} GB)` : ""}${f.name === current ? " (current)" : ""}`,
          })),
          initial: flavors.find((f) => f.name !== current)?.id ?? flavors[0]?.id,
        },
        confirm: "Resize",
        run: (_, flavorRef) => serverAction(s.id, { resize: { flavorRef } }),
      };
    },
  },
  {
    action: "migrate",
    label: "Migrate…",
    when: adminOnly(canMove),
    ask: (s, { destinations }) => ({
      title: `Migrate ${s.name}?`,
      text: `A cold migration: the server stops on ${hostOf(s)}, moves with its flavor, and waits as VERIFY_RESIZE for you to confirm or revert. A named host is checked by the scheduler (2.56).`,
      choice: { label: "Destination", options: destinations },
      confirm: "Migrate",
      run: (_, host) => serverAction(s.id, { migrate: host ? { host } : null }),
    }),
  },
  {
    action: "live-migrate",
    label: "Live-migrate…",
    // Nova's live_migrate: ACTIVE or PAUSED (a paused server stays paused where it lands)
    when: adminOnly(idleIn("ACTIVE", "PAUSED")),
    ask: (s, { destinations }) => ({
      title: `Live-migrate ${s.name}?`,
      text: `It keeps running (a paused one stays paused) while it is copied from ${hostOf(s)} to the destination, then runs there: there is nothing to confirm. The scheduler picks the host, or checks the one named. A host whose driver cannot move a guest live (exec) refuses. While it runs you can force it to complete or abort it.`,
      choice: { label: "Destination", options: destinations },
      confirm: "Live-migrate",
      run: (_, host) => liveMigrate(s.id, host),
    }),
  },
  {
    action: "rebuild",
    label: "Rebuild…",
    // Nova's rebuild: ACTIVE, SHUTOFF or ERROR with no task in progress
    when: idleIn("ACTIVE", "SHUTOFF", "ERROR"),
    ready: (c) => c.images.length > 0,
    ask: (s, { images }) => {
      const image = typeof s.image === "object" ? s.image.id : undefined;
      return {
        title: `Rebuild ${s.name}?`,
        text: "Its disk is replaced by the image's, on the host it is on; its name, flavor and addresses stay. The scheduler checks that its host accepts the image: if not, the server stays as it was, with a fault.",
        choice: {
          label: "Image",
          options: images.map((i) => ({
            value: i.id,
            label: `${i.name}${i.id === image ? " (current)" : ""}`,
          })),
          ...(image ? { initial: image } : {}),
        },
        confirm: "Rebuild",
        run: (_, imageRef) => serverAction(s.id, { rebuild: { imageRef } }),
      };
    },
  },
  {
    action: "confirmResize",
    label: "Confirm resize",
    when: (s) => s.status === "VERIFY_RESIZE",
    ask: (s) => ({
      title: `Confirm the move of ${s.name}?`,
      text: `It keeps running where it is now, with ${s.flavor?.original_name ?? "its flavor"}; the source's copy and claim are let go. There is no revert after this.`,
      confirm: "Confirm resize",
      run: () => serverAction(s.id, { confirmResize: null }),
    }),
  },
  {
    action: "revertResize",
    label: "Revert resize",
    when: (s) => s.status === "VERIFY_RESIZE",
    ask: (s) => ({
      title: `Revert the move of ${s.name}?`,
      text: "It goes back to its source host with its old flavor; the destination's copy and claim are let go.",
      confirm: "Revert resize",
      run: () => serverAction(s.id, { revertResize: null }),
    }),
  },
  {
    action: "pause",
    label: "Pause",
    when: idleIn("ACTIVE"),
    ask: (s) => ({
      title: `Pause ${s.name}?`,
      text: `Its guest is frozen in memory on ${hostOf(s)} (exec: SIGSTOP to its processes; libvirt: the domain suspended) and becomes PAUSED. It keeps its host and its claim; unpause lets it run on from where it stopped.`,
      confirm: "Pause",
      run: () => serverAction(s.id, { pause: null }),
    }),
  },
  {
    action: "unpause",
    label: "Unpause",
    when: idleIn("PAUSED"),
    ask: (s) => ({
      title: `Unpause ${s.name}?`,
      text: `Its guest runs on from where it was frozen, on ${hostOf(s)}, and becomes ACTIVE.`,
      confirm: "Unpause",
      run: () => serverAction(s.id, { unpause: null }),
    }),
  },
  {
    action: "suspend",
    label: "Suspend",
    when: idleIn("ACTIVE"),
    ask: (s) => ({
      title: `Suspend ${s.name}?`,
      text: `Its guest's state is saved and it stops on ${hostOf(s)} (libvirt: managedsave; exec: stopped and held) and becomes SUSPENDED. It keeps its host and its claim; resume restores it.`,
      confirm: "Suspend",
      run: () => serverAction(s.id, { suspend: null }),
    }),
  },
  {
    action: "resume",
    label: "Resume",
    when: idleIn("SUSPENDED"),
    ask: (s) => ({
      title: `Resume ${s.name}?`,
      text: `Its guest is restored from its saved state on ${hostOf(s)} and becomes ACTIVE.`,
      confirm: "Resume",
      run: () => serverAction(s.id, { resume: null }),
    }),
  },
  {
    action: "shelve",
    label: "Shelve",
    when: canShelve,
    ask: (s) => ({
      title: `Shelve ${s.name}?`,
      text: `It stops on ${hostOf(s)} and an image of it is kept (${s.name}-shelved), and it becomes SHELVED. Its host keeps its claim until the server is offloaded: at once when shelved_offload_time is 0 (the default), later by the watchdog, or by an admin's Shelve offload. SHELVED_OFFLOADED frees the host's claim; its quota stays counted. Unshelve starts it again.`,
      confirm: "Shelve",
      run: () => serverAction(s.id, { shelve: null }),
    }),
  },
  {
    action: "shelveOffload",
    label: "Shelve offload",
    // Nova's shelve_offload: SHELVED only; its policy is admin
    when: adminOnly(idleIn("SHELVED")),
    ask: (s) => ({
      title: `Offload ${s.name}?`,
      text: `${hostOf(s)} destroys its guest and frees its claim: it becomes SHELVED_OFFLOADED, with no host. Its shelved image stays, and its quota stays counted. Unshelve schedules it again, as a build, on whatever host fits then.`,
      confirm: "Offload",
      run: () => serverAction(s.id, { shelveOffload: null }),
    }),
  },
  {
    action: "unshelve",
    label: "Unshelve…",
    when: idleIn("SHELVED", "SHELVED_OFFLOADED"),
    ask: (s, { admin, destinations }) => {
      if (s.status === "SHELVED")
        return {
          title: `Unshelve ${s.name}?`,
          text: `It starts again on ${hostOf(s)}, which kept its claim, and becomes ACTIVE; its shelved image is deleted.`,
          confirm: "Unshelve",
          run: () => serverAction(s.id, { unshelve: null }),
        };
      return {
        title: `Unshelve ${s.name}?`,
        text: `It has no host: the conductor schedules it as a build. The scheduler picks a host${admin ? " (or checks the one named: 2.91)" : ""}, claims its flavor there, and that host spawns it from its shelved image; a host that fails sends it to the alternates. It becomes ACTIVE there, or SHELVED_OFFLOADED again if no host can take it.`,
        // Nova's unshelve_to_host policy is admin: a member never names a host
        ...(admin ? { choice: { label: "Host", options: destinations } } : {}),
        confirm: "Unshelve",
        run: (_, host) => serverAction(s.id, { unshelve: host ? { host } : null }),
      };
    },
  },
  {
    action: "createImage",
    label: "Create image…",
    when: canShelve,
    ask: (s) => ({
      title: `Snapshot ${s.name}?`,
      text: `${hostOf(s)} copies its disk into a new image of your project (queued, then saving, then active), which servers can boot from. The server stays ${s.status} on its host, with its claim.`,
      reasonLabel: "Image name",
      confirm: "Create image",
      run: (name) => serverAction(s.id, { createImage: { name } }),
    }),
  },
  {
    action: "createBackup",
    label: "Back up…",
    when: canShelve,
    ask: (s) => ({
      title: `Back up ${s.name}?`,
      text: `As a snapshot, an image of its disk made on ${hostOf(s)}, marked with its type; then the oldest backups of that type beyond the rotation are deleted. The server stays ${s.status} on its host, with its claim.`,
      reasonLabel: "Backup name",
      choice: { label: "Type and rotation", options: BACKUPS },
      confirm: "Back up",
      run: (name, pick) => {
        const [backup_type, keep] = pick.split(":");
        return serverAction(s.id, { createBackup: { name, backup_type, rotation: Number(keep) } });
      },
    }),
  },
  {
    action: "trigger_crash_dump",
    label: "Crash dump…",
    // Nova's ALLOW_TRIGGER_CRASH_DUMP: ACTIVE, PAUSED, VERIFY_RESIZE or ERROR, no task
    when: (s) => idleIn("ACTIVE", "PAUSED", "VERIFY_RESIZE", "ERROR")(s),
    ask: (s) => ({
      title: `Trigger a crash dump of ${s.name}?`,
      text: `An NMI is sent to its guest on ${hostOf(s)} (libvirt: virsh inject-nmi). What follows is the guest's own configuration: a kernel with kdump writes a dump and reboots. exec cannot send a process an NMI: the action then fails. Its state and claim do not change.`,
      confirm: "Send the NMI",
      run: () =>
        request(
          "POST",
          `/v2.1/servers/${s.id}/action`,
          { trigger_crash_dump: null },
          { headers: { "openstack-api-version": "compute 2.17" } },
        ),
    }),
  },
  {
    action: "os-resetState",
    label: "Reset state…",
    // Nova's os-resetState checks no state: an admin says what the server is
    when: (_, admin) => admin,
    ask: (s) => ({
      title: `Reset the state of ${s.name}?`,
      text: `Only its record changes: its state becomes the one picked and its task (${s["OS-EXT-STS:task_state"] ?? "none now"}) is cleared. Nothing is sent to ${hostOf(s)}, and its claim stays as it is. For a server stuck in a task its host will never finish.`,
      choice: {
        label: "State",
        options: [
          { value: "error", label: "error" },
          { value: "active", label: "active" },
        ],
      },
      confirm: "Reset state",
      run: (_, state) => serverAction(s.id, { "os-resetState": { state } }),
    }),
  },
];

/** A button per action the server's status allows, each asking first. */
export function ServerActionButtons({
  server: s,
  admin,
  flavors,
  images,
  onConfirm,
}: {
  server: Server;
  admin: boolean;
  flavors: Flavor[];
  images: Image[];
  onConfirm: (r: ConfirmRequest) => void;
}) {
  // compute hosts to migrate or unshelve to (admins only: a member never picks, or sees, a host)
  const services = usePoll<{ services: Service[] }>(
    admin ? "/v2.1/os-services?binary=nova-compute" : null,
    0,
  );
  const here = s["OS-EXT-SRV-ATTR:host"];
  const targets = (services.data?.services ?? [])
    .filter((x) => x.status === "enabled" && x.state === "up" && !x.forced_down && x.host !== here)
    .map((x) => x.host)
    .sort();
  const c: Context = {
    admin,
    flavors,
    images,
    destinations: [
      { value: "", label: "any host the scheduler picks" },
      ...targets.map((h) => ({ value: h, label: h })),
    ],
  };
  const valid = SERVER_ACTIONS.filter((a) => a.when(s, admin));
  if (!valid.length)
    return (
      <p class="note">
        No action while the server is {s.status}
        {s["OS-EXT-STS:task_state"] ? ` (${s["OS-EXT-STS:task_state"]})` : ""}.
      </p>
    );
  return (
    <div class="buttons">
      {valid.map((a) => (
        <button
          key={a.action}
          type="button"
          data-action={a.action}
          disabled={a.ready ? !a.ready(c) : false}
          onClick={() => onConfirm(a.ask(s, c))}
        >
          {a.label}
        </button>
      ))}
    </div>
  );
}
