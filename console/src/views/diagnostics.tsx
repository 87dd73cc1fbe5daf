// A server's diagnostics (admins): GET /servers/{id}/diagnostics in Nova's 2.48 shape, which the
// server's host reads from its driver (exec: cgroup or /proc; libvirt: domstats; fake: synthetic
// figures, said so in hypervisor_os). Each read asks the host, so it is read when the page opens,
// when the server's status or host changes, and on demand, never on a timer.
import { useEffect, useState } from "preact/hooks";
import { get } from "../api.js";
import { ErrorNote } from "../components.js";
import type { Diagnostics, Server } from "../types.js";

const shown = (v: number | null | undefined, unit = "") =>
  v === null || v === undefined ? "—" : `${v}${unit}`;

export function DiagnosticsPanel({ server: s }: { server: Server }) {
  const host = s["OS-EXT-SRV-ATTR:host"];
  const [data, setData] = useState<Diagnostics>();
  const [error, setError] = useState<string>();
  const [tick, setTick] = useState(0);
  // read again when it moved, stopped, paused or came back
  const readAgain = `${s.status}/${host ?? ""}/${tick}`;
  useEffect(() => {
    let alive = true;
    setData(undefined);
    setError(undefined);
    if (!host) return;
    get<Diagnostics>(`/v2.1/servers/${s.id}/diagnostics`)
      .then((d) => alive && setData(d))
      .catch((e: unknown) => alive && setError((e as Error).message));
    return () => {
      alive = false;
    };
  }, [s.id, host, readAgain]);
  return (
    <section aria-labelledby="diagnostics-title" data-testid="diagnostics">
      <h2 id="diagnostics-title">Diagnostics</h2>
      {!host ? (
        <p>No host runs it now, so there are no diagnostics to read.</p>
      ) : (
        <>
          <ErrorNote error={error} />
          {!data && !error && <p>Asking {host}…</p>}
          {data && (
            <>
              <dl class="facts">
                <dt>State</dt>
                <dd data-testid="diagnostics-state">{data.state}</dd>
                <dt>Driver</dt>
                <dd>
                  {data.driver}
                  {data.hypervisor && ` (${data.hypervisor})`}
                </dd>
                <dt>Hypervisor OS</dt>
                <dd>{data.hypervisor_os ?? "—"}</dd>
                <dt>Uptime</dt>
                <dd>{shown(data.uptime, " s")}</dd>
                <dt>Memory</dt>
                <dd>
                  {shown(data.memory_details.used)} of {shown(data.memory_details.maximum, " MiB")} used
                </dd>
                <dt>Config drive</dt>
                <dd>{data.config_drive ? "yes" : "no"}</dd>
              </dl>
              <table aria-label="CPUs">
                <thead>
                  <tr>
                    <th scope="col">CPU ({data.num_cpus})</th>
                    <th scope="col">Time (ns)</th>
                    <th scope="col">Utilisation</th>
                  </tr>
                </thead>
                <tbody>
                  {data.cpu_details.map((c, i) => (
                    <tr key={i}>
                      <th scope="row">{shown(c.id)}</th>
                      <td>{shown(c.time)}</td>
                      <td>{shown(c.utilisation, "%")}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <table aria-label="Disks">
                <thead>
                  <tr>
                    <th scope="col">Disk ({data.num_disks})</th>
                    <th scope="col">Read</th>
                    <th scope="col">Written</th>
                    <th scope="col">Errors</th>
                  </tr>
                </thead>
                <tbody>
                  {data.disk_details.map((d, i) => (
                    <tr key={i}>
                      <th scope="row">{i}</th>
                      <td>
                        {shown(d.read_bytes, " B")} in {shown(d.read_requests)} requests
                      </td>
                      <td>
                        {shown(d.write_bytes, " B")} in {shown(d.write_requests)} requests
                      </td>
                      <td>{shown(d.errors_count)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              {data.nic_details.length > 0 && (
                <table aria-label="Network interfaces">
                  <thead>
                    <tr>
                      <th scope="col">NIC ({data.num_nics})</th>
                      <th scope="col">Received</th>
                      <th scope="col">Sent</th>
                      <th scope="col">Errors, drops</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.nic_details.map((n, i) => (
                      <tr key={i}>
                        <th scope="row">{n.mac_address ?? i}</th>
                        <td>
                          {shown(n.rx_octets, " B")}, {shown(n.rx_packets)} packets
                        </td>
                        <td>
                          {shown(n.tx_octets, " B")}, {shown(n.tx_packets)} packets
                        </td>
                        <td>
                          in {shown(n.rx_errors)}, {shown(n.rx_drop)}; out {shown(n.tx_errors)},{" "}
                          {shown(n.tx_drop)}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </>
          )}
          <div class="buttons">
            <button type="button" data-action="read-diagnostics" onClick={() => setTick((t) => t + 1)}>
              Read again
            </button>
          </div>
        </>
      )}
    </section>
  );
}
