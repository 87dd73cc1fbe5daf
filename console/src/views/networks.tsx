// Networks, through Networking v2 (/networking/v2.0, Neutron's API): the networks the user sees
// (an admin every one, with its provider attributes: Neutron shows provider:* to admins only),
// and a network's page: its subnets with their used and free addresses, and its ports, each
// server's a link to the server. A member's port list holds its own ports only (Neutron's
// default policy), so on a shared network its counts are its own project's.
import { currentSession } from "../api.js";
import { Badge, ErrorNote } from "../components.js";
import { usePoll } from "../hooks.js";
import { subnetUsage } from "../model.js";
import type { Network, Port, Subnet } from "../types.js";

const NET = "/networking/v2.0";

function ProviderFacts({ n }: { n: Network }) {
  return (
    <>
      <td>{n["provider:network_type"] ?? ""}</td>
      <td>{n["provider:physical_network"] ?? ""}</td>
      <td>{n["provider:segmentation_id"] ?? ""}</td>
    </>
  );
}

export function NetworksView() {
  const admin = currentSession()?.admin ?? false;
  const networks = usePoll<{ networks: Network[] }>(`${NET}/networks`, 5_000);
  const subnets = usePoll<{ subnets: Subnet[] }>(`${NET}/subnets`, 5_000);
  const cidrs = (n: Network) =>
    (subnets.data?.subnets ?? [])
      .filter((s) => s.network_id === n.id)
      .map((s) => s.cidr)
      .join(", ");
  const rows = [...(networks.data?.networks ?? [])].sort((a, b) => a.name.localeCompare(b.name));
  return (
    <div>
      <h1>Networks</h1>
      <ErrorNote error={networks.error ?? subnets.error} />
      {!networks.data ? (
        <p>Loading…</p>
      ) : !rows.length ? (
        <p>No networks.</p>
      ) : (
        <table aria-label="Networks" data-testid="networks-table">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Status</th>
              <th scope="col">Shared</th>
              {admin && (
                <>
                  <th scope="col">Type</th>
                  <th scope="col">Physical network</th>
                  <th scope="col">Segment</th>
                  <th scope="col">Project</th>
                </>
              )}
              <th scope="col">Subnets</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((n) => (
              <tr key={n.id} data-network={n.name}>
                <th scope="row">
                  <a href={`#/networks/${n.id}`}>{n.name || n.id}</a>
                </th>
                <td>
                  <Badge value={n.status} />
                </td>
                <td>{n.shared ? "yes" : "no"}</td>
                {admin && (
                  <>
                    <ProviderFacts n={n} />
                    <td>{n.project_id}</td>
                  </>
                )}
                <td>{cidrs(n)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

/** a BigInt with its thousands marked (an IPv6 pool's count is past a Number's precision) */
const count = (n: bigint) => n.toLocaleString("en");

function SubnetsTable({ subnets, ports }: { subnets: Subnet[]; ports: Port[] }) {
  if (!subnets.length) return <p>No subnets: a port on this network gets no address.</p>;
  return (
    <table aria-label="Subnets" data-testid="subnets-table">
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">CIDR</th>
          <th scope="col">Gateway</th>
          <th scope="col">Allocation pools</th>
          <th scope="col">Used</th>
          <th scope="col">Free</th>
          <th scope="col">Pools used</th>
        </tr>
      </thead>
      <tbody>
        {subnets.map((s) => {
          const u = subnetUsage(s, ports);
          return (
            <tr key={s.id} data-subnet={s.cidr} data-used={String(u.used)} data-free={String(u.free)}>
              <th scope="row">{s.name || s.id}</th>
              <td>{s.cidr}</td>
              <td>{s.gateway_ip ?? "none"}</td>
              <td>
                {s.allocation_pools.map((p) => (
                  <div key={p.start}>
                    {p.start} – {p.end}
                  </div>
                ))}
              </td>
              <td class="num">{count(u.used)}</td>
              <td class="num">
                {count(u.free)} of {count(u.size)}
              </td>
              <td>
                {u.size > 0n && (
                  // a Number is close enough for a bar
                  <meter
                    min={0}
                    max={Number(u.size)}
                    value={Number(u.size - u.free)}
                    aria-label="Pools used"
                  />
                )}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function PortsTable({ ports, admin }: { ports: Port[]; admin: boolean }) {
  if (!ports.length) return <p>No ports.</p>;
  return (
    <table aria-label="Ports" data-testid="ports-table">
      <thead>
        <tr>
          <th scope="col">Port</th>
          <th scope="col">Device</th>
          <th scope="col">Fixed IPs</th>
          <th scope="col">MAC</th>
          <th scope="col">Status</th>
          {admin && <th scope="col">Host</th>}
        </tr>
      </thead>
      <tbody>
        {ports.map((p) => (
          <tr key={p.id} data-port={p.id} data-device={p.device_id}>
            <th scope="row" title={p.id}>
              {p.name || p.id}
            </th>
            <td>
              {p.device_owner.startsWith("compute:") && p.device_id ? (
                <a href={`#/servers/${p.device_id}`}>server {p.device_id}</a>
              ) : (
                p.device_id || <span class="note">none</span>
              )}
              {p.device_owner && <div class="note">{p.device_owner}</div>}
            </td>
            <td data-testid="port-ips">
              {p.fixed_ips.map((ip) => (
                <div key={ip.ip_address}>{ip.ip_address}</div>
              ))}
            </td>
            <td>{p.mac_address}</td>
            <td>
              <Badge value={p.status} />
            </td>
            {admin && <td>{p["binding:host_id"] || <span class="note">unbound</span>}</td>}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function NetworkView({ id }: { id: string }) {
  const admin = currentSession()?.admin ?? false;
  const q = `network_id=${encodeURIComponent(id)}`;
  const network = usePoll<{ network: Network }>(`${NET}/networks/${encodeURIComponent(id)}`, 5_000);
  const subnets = usePoll<{ subnets: Subnet[] }>(`${NET}/subnets?${q}`, 5_000);
  // ports come and go with servers: read more often
  const ports = usePoll<{ ports: Port[] }>(`${NET}/ports?${q}`, 3_000);
  const n = network.data?.network;
  const portList = ports.data?.ports ?? [];
  return (
    <div>
      <p>
        <a href="#/networks">← Networks</a>
      </p>
      <h1>{n?.name || id}</h1>
      <ErrorNote error={network.error} />
      {n && (
        <dl class="facts" data-testid="network-facts">
          <dt>Status</dt>
          <dd>
            <Badge value={n.status} />
          </dd>
          <dt>Shared</dt>
          <dd>{n.shared ? "yes: every project may put ports on it" : "no"}</dd>
          {admin && (
            <>
              <dt>Type</dt>
              <dd>{n["provider:network_type"]}</dd>
              <dt>Physical network</dt>
              <dd>{n["provider:physical_network"] ?? "none"}</dd>
              <dt>Segment</dt>
              <dd>{n["provider:segmentation_id"] ?? "none"}</dd>
              <dt>Project</dt>
              <dd>{n.project_id}</dd>
            </>
          )}
          <dt>MTU</dt>
          <dd>{n.mtu ?? ""}</dd>
          <dt>ID</dt>
          <dd>{n.id}</dd>
        </dl>
      )}
      <h2>Subnets</h2>
      <ErrorNote error={subnets.error ?? ports.error} />
      {!admin && n?.shared && (
        <p class="note">
          Used counts your project's ports only: other projects' ports on a shared network are not shown to
          you.
        </p>
      )}
      {!subnets.data || !ports.data ? (
        <p>Loading…</p>
      ) : (
        <SubnetsTable subnets={subnets.data.subnets} ports={portList} />
      )}
      <h2>Ports</h2>
      {ports.data && <PortsTable ports={portList} admin={admin} />}
    </div>
  );
}
