// Operations (admins): compute services (enable, disable with a reason, force down), the
// dead-letter queues with their reasons and a redrive, and the placement audit with repair.
// Every change asks first.
import { useState } from "preact/hooks";
import { post, put } from "../api.js";
import { ago, Badge, type ConfirmRequest, ErrorNote } from "../components.js";
import { usePoll } from "../hooks.js";
import type { DeadLetterQueue, FleetHost, Service } from "../types.js";

type Ask = (r: ConfirmRequest) => void;

const setService = (id: string, body: Record<string, unknown>) => put(`/v2.1/os-services/${id}`, body);

export function ServiceButtons({
  host,
  onConfirm,
}: {
  host: Pick<FleetHost, "host" | "service_id" | "status" | "forced_down">;
  onConfirm: Ask;
}) {
  return (
    <div class="buttons">
      {host.status === "enabled" ? (
        <button
          type="button"
          onClick={() =>
            onConfirm({
              title: `Disable ${host.host}?`,
              text: "The scheduler stops placing servers on it; its servers keep running.",
              reasonLabel: "Reason",
              confirm: "Disable",
              run: (reason) => setService(host.service_id, { status: "disabled", disabled_reason: reason }),
            })
          }
        >
          Disable {host.host}
        </button>
      ) : (
        <button
          type="button"
          onClick={() =>
            onConfirm({
              title: `Enable ${host.host}?`,
              text: "The scheduler may place servers on it again.",
              confirm: "Enable",
              run: () => setService(host.service_id, { status: "enabled" }),
            })
          }
        >
          Enable {host.host}
        </button>
      )}
      <button
        type="button"
        onClick={() =>
          onConfirm(
            host.forced_down
              ? {
                  title: `Clear forced down on ${host.host}?`,
                  text: "Its heartbeats decide whether it is up again.",
                  confirm: "Clear forced down",
                  run: () => setService(host.service_id, { forced_down: false }),
                }
              : {
                  title: `Force ${host.host} down?`,
                  text: "It is down at once, whatever its heartbeats say: its builds in flight are fenced and rebuilt elsewhere.",
                  confirm: "Force down",
                  run: () => setService(host.service_id, { forced_down: true }),
                },
          )
        }
      >
        {host.forced_down ? "Clear forced down" : "Force down"}
      </button>
    </div>
  );
}

function Services({ onConfirm }: { onConfirm: Ask }) {
  const { data, error, reload } = usePoll<{ services: Service[] }>(
    "/v2.1/os-services?binary=nova-compute",
    3_000,
  );
  const ask: Ask = (r) =>
    onConfirm({
      ...r,
      run: async (x, c) => {
        await r.run(x, c);
        reload();
      },
    });
  return (
    <section aria-labelledby="services-title">
      <h2 id="services-title">Compute services</h2>
      <ErrorNote error={error} />
      <table aria-label="Compute services" data-testid="services-table">
        <thead>
          <tr>
            <th scope="col">Host</th>
            <th scope="col">Zone</th>
            <th scope="col">Status</th>
            <th scope="col">State</th>
            <th scope="col">Reason</th>
            <th scope="col">Heartbeat</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {(data?.services ?? []).map((s) => (
            <tr key={s.id} data-host={s.host} data-status={s.status}>
              <th scope="row">
                <a href={`#/hosts/${encodeURIComponent(s.host)}`}>{s.host}</a>
              </th>
              <td>{s.zone}</td>
              <td>
                <Badge value={s.status} />
              </td>
              <td>
                <Badge value={s.forced_down ? "forced down" : s.state} />
              </td>
              <td>{s.disabled_reason ?? ""}</td>
              <td>{ago(s.updated_at)}</td>
              <td>
                <ServiceButtons
                  host={{
                    host: s.host,
                    service_id: s.id,
                    status: s.status,
                    forced_down: Boolean(s.forced_down),
                  }}
                  onConfirm={ask}
                />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function DeadLetters({ onConfirm }: { onConfirm: Ask }) {
  const { data, error, reload } = usePoll<{ dead_letter_queues: DeadLetterQueue[] }>(
    "/v2.1/os-dead-letters",
    15_000,
  );
  const queues = (data?.dead_letter_queues ?? []).filter(
    (q) => q.approximate_messages > 0 || q.messages.length,
  );
  return (
    <section aria-labelledby="dlq-title">
      <h2 id="dlq-title">Dead-letter queues</h2>
      <ErrorNote error={error} />
      <p>
        {data ? `${data.dead_letter_queues.length} queues, ${queues.length} holding messages.` : "Loading…"}{" "}
        <button type="button" onClick={reload}>
          Refresh
        </button>
      </p>
      {queues.map((q) => (
        <div key={q.name} class="dlq" data-queue={q.name}>
          <h3>
            {q.name} → {q.source}: {q.approximate_messages} message{q.approximate_messages === 1 ? "" : "s"}
          </h3>
          {q.redrivable ? (
            <button
              type="button"
              onClick={() =>
                onConfirm({
                  title: `Redrive ${q.name}?`,
                  text: `Its ${q.approximate_messages} messages go back to ${q.source}. A message that still fails comes back here.`,
                  confirm: "Redrive",
                  run: async () => {
                    await post(`/v2.1/os-dead-letters/${encodeURIComponent(q.name)}/action`, { redrive: {} });
                    reload();
                  },
                })
              }
            >
              Redrive {q.name}
            </button>
          ) : (
            <p class="note">Not redriven: {q.not_redrivable_reason}</p>
          )}
          <ul>
            {q.messages.map((m) => (
              <li key={m.message_id}>
                <strong>{m.reason}</strong> · {ago(m.sent_at)} · received {m.receive_count}×
                <details>
                  <summary>body</summary>
                  <pre>{m.body}</pre>
                </details>
              </li>
            ))}
          </ul>
        </div>
      ))}
    </section>
  );
}

interface Finding {
  kind: string;
  host: string;
  consumer?: string;
  attempt?: number;
  resource_class?: string;
  detail: string;
  repaired?: string;
}

interface AuditReport {
  hosts_checked: number;
  allocations_checked: number;
  findings: Finding[];
}

function Audit({ onConfirm }: { onConfirm: Ask }) {
  const { data, error, reload } = usePoll<{ placement_audit: AuditReport }>("/v2.1/os-placement-audit", 0);
  const [repaired, setRepaired] = useState<Finding[]>();
  const findings = data?.placement_audit.findings ?? [];
  return (
    <section aria-labelledby="audit-title">
      <h2 id="audit-title">Placement audit</h2>
      <ErrorNote error={error} />
      <p>
        {data
          ? `${data.placement_audit.hosts_checked} hosts and ${data.placement_audit.allocations_checked} allocations checked: ${findings.length} finding${findings.length === 1 ? "" : "s"}.`
          : "Auditing…"}{" "}
        <button type="button" onClick={reload}>
          Audit again
        </button>{" "}
        {findings.length > 0 && (
          <button
            type="button"
            onClick={() =>
              onConfirm({
                title: "Repair placement?",
                text: `Fixes the ${findings.length} findings: leaked claims released, usage recounted from the allocations.`,
                confirm: "Repair",
                run: async () => {
                  const r = await post<{ placement_audit: AuditReport }>("/v2.1/os-placement-audit", {});
                  setRepaired(r.placement_audit.findings);
                  reload();
                },
              })
            }
          >
            Repair
          </button>
        )}
      </p>
      <ul>
        {findings.map((f, i) => (
          <li key={`${f.kind}-${i}`}>
            <strong>{f.kind}</strong> on {f.host}
            {f.consumer && <> · {f.consumer}</>}
            {f.resource_class && <> · {f.resource_class}</>}: {f.detail}
          </li>
        ))}
      </ul>
      {repaired && (
        <>
          <h3>Repaired</h3>
          <ul>
            {repaired.map((f, i) => (
              <li key={`r-${f.kind}-${i}`}>
                <strong>{f.kind}</strong> on {f.host}: {f.repaired ?? "not repaired"}
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

export function OperationsView({ onConfirm }: { onConfirm: Ask }) {
  return (
    <div>
      <h1>Operations</h1>
      <Services onConfirm={onConfirm} />
      <DeadLetters onConfirm={onConfirm} />
      <Audit onConfirm={onConfirm} />
    </div>
  );
}
