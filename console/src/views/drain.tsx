// Draining a host (admins, on the host's page): after asking, the host is disabled and every
// server on it cold-migrated and confirmed, or live-migrated (with a cold move for those that
// cannot go live, if chosen), two at a time, each server's outcome shown as it goes.
// The procedure is novaless-drain's own (../drain.ts), through the public API with the admin's
// token. It runs in this tab: leaving the page stops watching, not the moves under way.
import { useState } from "preact/hooks";
import { request } from "../api.js";
import { Badge, type ConfirmRequest, ErrorNote } from "../components.js";
import { type DrainOutcome, type DrainRequest, type DrainResult, drainHost } from "../drain.js";

const consoleRequest: DrainRequest = async <T,>(
  method: string,
  path: string,
  body?: unknown,
  microversion?: string,
) => {
  const r = await request<T>(
    method,
    path,
    body,
    microversion ? { headers: { "openstack-api-version": `compute ${microversion}` } } : {},
  );
  return { body: r.body, requestId: r.headers.get("x-openstack-request-id") };
};

/** The dialog's choice: how each server moves. */
const HOW = [
  {
    value: "cold",
    label: "cold: migrate and confirm each (a running server is powered off, and on again)",
  },
  { value: "live", label: "live: each running server keeps running; skip those that cannot go live" },
  { value: "live-fallback", label: "live, and cold for those that cannot go live" },
];

interface DrainRun {
  live: boolean;
  notes: string[];
  rows: DrainOutcome[];
  result?: DrainResult;
  error?: string;
}

const FINAL = ["migrated", "failed", "skipped"];

export function DrainHost({
  host,
  servers,
  onConfirm,
}: {
  host: string;
  servers: number;
  onConfirm: (r: ConfirmRequest) => void;
}) {
  const [run, setRun] = useState<DrainRun>();
  const running = Boolean(run && !run.result && !run.error);
  const patch = (f: (r: DrainRun) => DrainRun) => setRun((r) => (r ? f(r) : r));

  // resolves once the host is disabled and the moves begin (the dialog then closes), rejects with
  // the API's message if it refuses before that (shown in the dialog)
  const begin = (reason: string, how: string) =>
    new Promise<void>((resolve, reject) => {
      let started = false;
      const live = how !== "cold";
      setRun({ live, notes: [], rows: [] });
      drainHost(consoleRequest, {
        host,
        disabledReason: reason,
        live,
        fallbackCold: how === "live-fallback",
        onNote: (text) => {
          started = true;
          patch((r) => ({ ...r, notes: [...r.notes, text] }));
          resolve();
        },
        onUpdate: (o) =>
          patch((r) => {
            const i = r.rows.findIndex((x) => x.id === o.id);
            const rows = i === -1 ? [...r.rows, o] : r.rows.map((x, j) => (j === i ? o : x));
            return { ...r, rows };
          }),
      })
        .then((result) => patch((r) => ({ ...r, result })))
        .catch((e: Error) => {
          if (started) patch((r) => ({ ...r, error: e.message }));
          else {
            setRun(undefined);
            reject(e);
          }
        });
    });

  const ask = () =>
    onConfirm({
      title: `Drain ${host}?`,
      text:
        `${host} is disabled first, so nothing new lands on it. Then each of its ${servers} server(s) ` +
        "moves to a host the scheduler picks, two at a time. A cold migration powers a running server " +
        "off, and on again on its new host, and is confirmed. A live migration keeps it running; only " +
        "an ACTIVE server on a host whose driver can (not exec) goes live. Servers that are not ACTIVE " +
        "or SHUTOFF, or have a task in progress, are skipped.",
      reasonLabel: "Reason for disabling",
      choice: { label: "How", options: HOW },
      confirm: "Drain",
      run: (reason, how) => begin(reason, how),
    });

  const count = (s: string) => run?.rows.filter((o) => o.state === s).length ?? 0;
  return (
    <section aria-labelledby="drain-title" data-testid="drain" data-done={String(Boolean(run?.result))}>
      <h2 id="drain-title">Drain</h2>
      <div class="buttons">
        <button type="button" data-action="drain" disabled={running} onClick={ask}>
          {running ? `Draining ${host}…` : `Drain ${host}…`}
        </button>
      </div>
      {run && (
        <>
          {run.notes.map((n) => (
            <p key={n} class="note">
              {n}
            </p>
          ))}
          {run.rows.length > 0 && (
            <table aria-label={`Drain of ${host}`} aria-live="polite" data-testid="drain-table">
              <thead>
                <tr>
                  <th scope="col">Server</th>
                  <th scope="col">Outcome</th>
                  <th scope="col">Host or reason</th>
                </tr>
              </thead>
              <tbody>
                {run.rows.map((o) => (
                  <tr key={o.id} data-server={o.name} data-state={o.state}>
                    <th scope="row">
                      <a href={`#/servers/${o.id}`}>{o.name}</a>
                    </th>
                    <td>
                      <Badge value={o.state} />
                    </td>
                    <td data-testid="drain-detail">
                      {o.state === "migrated"
                        ? `to ${o.host}${o.detail ? ` (${o.detail})` : ""}`
                        : FINAL.includes(o.state)
                          ? o.detail
                          : o.state === "confirming"
                            ? `confirming on ${o.host}`
                            : o.state === "migrating"
                              ? `${o.how ?? ""}${o.detail ? `: ${o.detail}` : ""}`
                              : o.detail}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <ErrorNote error={run.error} />
          {run.result && (
            <p data-testid="drain-summary" data-ok={String(run.result.ok)}>
              {count("migrated")} of {run.rows.length} server(s) migrated
              {run.live
                ? ` (${run.rows.filter((o) => o.state === "migrated" && o.how === "live").length} live, ${run.rows.filter((o) => o.state === "migrated" && o.how === "cold").length} cold)`
                : ""}
              , {count("failed")} failed, {count("skipped")} skipped;{" "}
              {run.result.remaining ? `${run.result.remaining} still on ${host}` : `${host} is empty`}.
            </p>
          )}
        </>
      )}
    </section>
  );
}
