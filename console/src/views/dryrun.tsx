// Dry run: what a create would do (os-scheduler/plan), explained before anything is created.
// Its request is a server create's, so from 2.37 it names its networks (a network's availability
// zone hints go to the scheduler).
import { useState } from "preact/hooks";
import { post } from "../api.js";
import { ErrorNote } from "../components.js";
import { usePoll } from "../hooks.js";
import { parseHints } from "../model.js";
import type { Plan } from "../types.js";
import { Explainer } from "./explainer.js";

interface Named {
  id: string;
  name: string;
}

export function DryRunView() {
  const flavors = usePoll<{ flavors: Named[] }>("/v2.1/flavors", 0);
  // Compute's image proxy ends at 2.35: the Image API (Glance) lists them
  const images = usePoll<{ images: Named[] }>("/image/v2/images?limit=1000", 0);
  const zones = usePoll<{ availabilityZoneInfo: { zoneName: string }[] }>("/v2.1/os-availability-zone", 0);
  const groups = usePoll<{ server_groups: Named[] }>("/v2.1/os-server-groups?all_projects=true", 0);
  const networks = usePoll<{ networks: Named[] }>("/networking/v2.0/networks", 0);
  const [flavorPicked, setFlavor] = useState("");
  const [imagePicked, setImage] = useState("");
  // until one is picked, the first of each list: what the select shows is what is sent
  const flavor = flavorPicked || flavors.data?.flavors[0]?.id || "";
  const image = imagePicked || images.data?.images[0]?.id || "";
  const [zone, setZone] = useState("");
  const [group, setGroup] = useState("");
  const [picked, setNetwork] = useState<string>();
  // until one is picked: auto when there is a network, else none (auto would find none to allocate)
  const network = picked ?? (networks.data?.networks.length ? "auto" : "none");
  const [hints, setHints] = useState("");
  const [count, setCount] = useState(1);
  const [plan, setPlan] = useState<Plan>();
  const [which, setWhich] = useState(0);
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const h: Record<string, unknown> = parseHints(hints);
      if (group) h.group = group;
      const { plan: p } = await post<{ plan: Plan }>("/v2.1/os-scheduler/plan", {
        server: {
          name: "dry-run",
          flavorRef: flavor,
          imageRef: image,
          ...(zone ? { availability_zone: zone } : {}),
          networks: ["auto", "none"].includes(network) ? network : [{ uuid: network }],
          min_count: count,
          max_count: count,
        },
        ...(Object.keys(h).length ? { "os:scheduler_hints": h } : {}),
      });
      setPlan(p);
      // NoValidHost: open on the instance that found no host
      const failing = p.explanations.findIndex((x) => !x.chosen);
      setWhich(p.no_valid_host && failing >= 0 ? failing : 0);
    } catch (x) {
      setPlan(undefined);
      setError((x as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const explanation = plan?.explanations[which];
  return (
    <div>
      <h1>Dry run</h1>
      <p>What the scheduler would do with this request now. Nothing is claimed or created.</p>
      <form class="dryrun" onSubmit={submit} aria-label="Dry run">
        <label>
          Flavor
          <select name="flavor" value={flavor} onChange={(e) => setFlavor(e.currentTarget.value)}>
            {(flavors.data?.flavors ?? []).map((f) => (
              <option key={f.id} value={f.id}>
                {f.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Image
          <select name="image" value={image} onChange={(e) => setImage(e.currentTarget.value)}>
            {(images.data?.images ?? []).map((i) => (
              <option key={i.id} value={i.id}>
                {i.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Availability zone
          <select name="zone" value={zone} onChange={(e) => setZone(e.currentTarget.value)}>
            <option value="">any</option>
            {(zones.data?.availabilityZoneInfo ?? []).map((z) => (
              <option key={z.zoneName}>{z.zoneName}</option>
            ))}
          </select>
        </label>
        <label>
          Network
          <select name="network" value={network} onChange={(e) => setNetwork(e.currentTarget.value)}>
            <option value="auto">auto: the one network available</option>
            <option value="none">none</option>
            {(networks.data?.networks ?? []).map((n) => (
              <option key={n.id} value={n.id}>
                {n.name || n.id}
              </option>
            ))}
          </select>
        </label>
        <label>
          Server group
          <select name="group" value={group} onChange={(e) => setGroup(e.currentTarget.value)}>
            <option value="">none</option>
            {(groups.data?.server_groups ?? []).map((g) => (
              <option key={g.id} value={g.id}>
                {g.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Count
          <input
            name="count"
            type="number"
            min={1}
            max={1000}
            value={count}
            onInput={(e) => setCount(Number(e.currentTarget.value) || 1)}
          />
        </label>
        <label class="wide">
          Scheduler hints (key=value per line, or JSON)
          <textarea name="hints" rows={3} value={hints} onInput={(e) => setHints(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={busy}>
          Plan
        </button>
      </form>
      <ErrorNote error={error} />
      {plan && (
        <section aria-label="Plan" data-testid="plan" data-no-valid-host={String(plan.no_valid_host)}>
          <h2>
            {plan.no_valid_host
              ? "No valid host"
              : `${plan.selections.length} placement${plan.selections.length === 1 ? "" : "s"}`}
          </h2>
          {plan.warnings.map((w) => (
            <p key={w} class="warning" role="note">
              {w}
            </p>
          ))}
          {!plan.no_valid_host && (
            <ol>
              {plan.selections.map((s, i) => (
                <li key={`${s.host}-${i}`}>
                  {s.host}
                  {s.alternates.length > 0 && (
                    <> (alternates: {s.alternates.map((a) => a.host).join(", ")})</>
                  )}
                </li>
              ))}
            </ol>
          )}
          {plan.explanations.length > 1 && (
            <label>
              Instance
              <select value={which} onChange={(e) => setWhich(Number(e.currentTarget.value))}>
                {plan.explanations.map((x, i) => (
                  <option key={x.index} value={i}>
                    {x.index + 1}
                  </option>
                ))}
              </select>
            </label>
          )}
          {explanation && <Explainer explanation={explanation} summary={plan.summary} />}
        </section>
      )}
    </div>
  );
}
