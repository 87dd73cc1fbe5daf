// Shared pieces: a confirmation dialog (the native <dialog>, which traps focus and closes on
// Escape), status badges, errors, a utilization bar.
import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";

export function ErrorNote({ error }: { error: string | undefined }) {
  return error ? (
    <p class="error" role="alert">
      {error}
    </p>
  ) : null;
}

export function Badge({ value }: { value: string }) {
  return <span class={`badge badge-${value.toLowerCase().replace(/[^a-z]+/g, "-")}`}>{value}</span>;
}

export function UsageBar({ used, capacity, label }: { used: number; capacity: number; label: string }) {
  return (
    <div class="usage" title={`${used} of ${capacity}`}>
      <meter min={0} max={Math.max(capacity, 1)} value={used} aria-label={label} />
      <span>
        {used} / {capacity}
      </span>
    </div>
  );
}

export interface ConfirmRequest {
  title: string;
  text: string;
  /** a reason the operator types (os-services disable) */
  reasonLabel?: string;
  /** one of a list the operator picks (a resize's flavor, a migration's host) */
  choice?: { label: string; options: { value: string; label: string }[]; initial?: string };
  confirm: string;
  run: (reason: string, choice: string) => Promise<unknown>;
}

/** Asks before an admin action; shows the API's answer if it refuses. */
export function Confirm({ request, onDone }: { request: ConfirmRequest | null; onDone: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const [reason, setReason] = useState("");
  const [choice, setChoice] = useState("");
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (request && !d.open) {
      setReason("");
      setChoice(request.choice?.initial ?? request.choice?.options[0]?.value ?? "");
      setError(undefined);
      d.showModal();
    }
    if (!request && d.open) d.close();
  }, [request]);
  if (!request) return <dialog ref={ref} />;
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    try {
      await request.run(reason, choice);
      onDone();
    } catch (x) {
      setError((x as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <dialog ref={ref} aria-labelledby="confirm-title" onClose={onDone}>
      <form method="dialog" onSubmit={submit}>
        <h2 id="confirm-title">{request.title}</h2>
        <p>{request.text}</p>
        {request.reasonLabel && (
          <label>
            {request.reasonLabel}
            <input name="reason" value={reason} onInput={(e) => setReason(e.currentTarget.value)} required />
          </label>
        )}
        {request.choice && (
          <label>
            {request.choice.label}
            <select name="choice" value={choice} onChange={(e) => setChoice(e.currentTarget.value)}>
              {request.choice.options.map((o) => (
                <option key={o.value} value={o.value}>
                  {o.label}
                </option>
              ))}
            </select>
          </label>
        )}
        <ErrorNote error={error} />
        <div class="buttons">
          <button type="button" onClick={onDone}>
            Cancel
          </button>
          <button type="submit" class="danger" disabled={busy}>
            {request.confirm}
          </button>
        </div>
      </form>
    </dialog>
  );
}

export function Section({
  title,
  children,
  id,
}: {
  title: string;
  children: ComponentChildren;
  id?: string;
}) {
  return (
    <section aria-labelledby={id ?? title.replace(/\W+/g, "-")}>
      <h2 id={id ?? title.replace(/\W+/g, "-")}>{title}</h2>
      {children}
    </section>
  );
}

export const ago = (iso: string | null | undefined): string => {
  if (!iso) return "never";
  const s = Math.round((Date.now() - Date.parse(iso)) / 1000);
  if (s < 60) return `${Math.max(0, s)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
};
