// The decision explainer: why this host (each weigher's share of every ranked host's weight, a
// stacked bar per host, the chosen one marked) and why no host (the filter funnel: hosts in and
// out per stage with the grouped reasons), under the scheduler's own summary sentence.
import { barExtent, funnel, weightBars } from "../model.js";
import type { Explanation } from "../types.js";

const PALETTE = [
  "#3b82f6",
  "#f59e0b",
  "#10b981",
  "#8b5cf6",
  "#ef4444",
  "#14b8a6",
  "#ec4899",
  "#84cc16",
  "#64748b",
];
const colorOf = (i: number) => PALETTE[i % PALETTE.length]!;
const fmt = (n: number) => (Math.abs(n) >= 100 ? n.toFixed(0) : n.toFixed(3));

export function Explainer({ explanation, summary }: { explanation: Explanation; summary: string }) {
  return (
    <div class="explainer">
      <p class="summary" data-testid="decision-summary">
        {summary}
      </p>
      <Funnel explanation={explanation} />
      <Weights explanation={explanation} />
    </div>
  );
}

function Funnel({ explanation }: { explanation: Explanation }) {
  const steps = funnel(explanation);
  const width = (n: number) => `${explanation.hosts ? (n / explanation.hosts) * 100 : 0}%`;
  return (
    <div>
      <h3>
        Filters: {explanation.hosts} hosts in, {explanation.candidates} passed
      </h3>
      <table class="funnel" aria-label="Hosts in and out per filter">
        <thead>
          <tr>
            <th scope="col">Stage</th>
            <th scope="col">In</th>
            <th scope="col">Passed</th>
            <th scope="col" class="wide">
              Rejected, and why
            </th>
          </tr>
        </thead>
        <tbody>
          {steps.map((s) => (
            <tr key={s.stage} class={s.rejected ? "rejecting" : ""}>
              <th scope="row">{s.stage}</th>
              <td>{s.hostsIn}</td>
              <td>
                <div class="funnel-bar" aria-hidden="true">
                  <div style={{ width: width(s.passed) }} />
                </div>
                {s.passed}
              </td>
              <td>
                {s.skipped && <em>skipped: {s.skipped}</em>}
                {s.reasons.length > 0 && (
                  <ul>
                    {s.reasons.map((r) => (
                      <li key={r.summary}>
                        <strong>{r.count}</strong> {r.summary}
                        {r.sample.length > 0 && <span class="sample"> (e.g. {r.sample.join(", ")})</span>}
                      </li>
                    ))}
                  </ul>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function Weights({ explanation }: { explanation: Explanation }) {
  const bars = weightBars(explanation);
  if (!bars.length) return <p>No host passed every filter: nothing was weighed.</p>;
  if (!explanation.weighers.length)
    return <p>One host passed every filter: Nova does not weigh a single candidate.</p>;
  const { min, max } = barExtent(bars);
  const span = max - min;
  const pct = (v: number) => `${(Math.abs(v) / span) * 100}%`;
  const zero = `${(-min / span) * 100}%`;
  return (
    <div>
      <h3>Weighers: the top {bars.length} hosts</h3>
      <ul class="legend" aria-label="Weighers">
        {explanation.weighers.map((w, i) => (
          <li key={w.weigher}>
            <span class="swatch" style={{ background: colorOf(i) }} />
            {w.weigher} (×{w.hosts[0]?.multiplier ?? 1})
          </li>
        ))}
      </ul>
      <table class="weights" aria-label="Each weigher's contribution to each host's weight">
        <tbody>
          {bars.map((b) => {
            let right = 0;
            let left = 0;
            return (
              <tr key={b.host} class={b.chosen ? "chosen" : ""} data-host={b.host}>
                <th scope="row">
                  {b.host}
                  {b.chosen && <span class="chosen-mark"> ← chosen</span>}
                </th>
                <td class="bar-cell">
                  <div class="bar" title={b.segments.map((s) => `${s.weigher}: ${fmt(s.value)}`).join("\n")}>
                    <div class="zero" style={{ left: zero }} />
                    {b.segments.map((s, i) => {
                      if (s.value === 0) return null;
                      const style =
                        s.value > 0
                          ? {
                              left: `calc(${zero} + ${pct(right)})`,
                              width: pct(s.value),
                              background: colorOf(i),
                            }
                          : {
                              right: `calc(100% - ${zero} + ${pct(left)})`,
                              width: pct(s.value),
                              background: colorOf(i),
                            };
                      if (s.value > 0) right += s.value;
                      else left -= s.value;
                      return (
                        <div
                          key={s.weigher}
                          class="segment"
                          role="img"
                          style={style}
                          aria-label={`${s.weigher} ${fmt(s.value)}`}
                        />
                      );
                    })}
                  </div>
                </td>
                <td class="num">{fmt(b.weight)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
