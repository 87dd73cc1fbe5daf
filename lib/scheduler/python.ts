// Python's semantics, where Nova's behaviour depends on them: float() and int() of text, str()
// of a value, truthiness, == and ordering between mixed values. JSON-shaped values only.

const FLOAT = /^[+-]?(?:(?:\d(?:_?\d)*)?\.?\d(?:_?\d)*(?:[eE][+-]?\d(?:_?\d)*)?|\d(?:_?\d)*\.)$/;
const SPECIAL = /^[+-]?(?:inf|infinity|nan)$/i;
const INT = /^[+-]?\d(?:_?\d)*$/;

/** Python's float(text), or undefined where it raises ValueError. */
export function pyFloat(text: string): number | undefined {
  const t = text.trim();
  if (SPECIAL.test(t)) {
    const sign = t.startsWith("-") ? -1 : 1;
    return /nan/i.test(t) ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  }
  if (!FLOAT.test(t)) return undefined;
  return Number(t.replaceAll("_", ""));
}

/** Python's int(text) (base 10), or undefined where it raises ValueError. */
export function pyInt(text: string): number | undefined {
  const t = text.trim();
  return INT.test(t) ? Number(t.replaceAll("_", "")) : undefined;
}

/** Python's str(value) for JSON-shaped values; `float` marks a number Python holds as a float. */
export function pyStr(value: unknown, float = false): string {
  if (value === null || value === undefined) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "number") return pyNumber(value, float);
  if (typeof value === "string") return value;
  return pyRepr(value);
}

function pyNumber(n: number, float: boolean): string {
  if (Number.isNaN(n)) return "nan";
  if (!Number.isFinite(n)) return n > 0 ? "inf" : "-inf";
  if (float && Number.isInteger(n) && Math.abs(n) < 1e16) return `${n}.0`;
  return String(n);
}

function pyRepr(value: unknown): string {
  if (typeof value === "string") return `'${value.replaceAll("\\", "\\\\").replaceAll("'", "\\'")}'`;
  if (Array.isArray(value)) return `[${value.map(pyRepr).join(", ")}]`;
  if (value && typeof value === "object") {
    const items = Object.entries(value).map(([k, v]) => `${pyRepr(k)}: ${pyRepr(v)}`);
    return `{${items.join(", ")}}`;
  }
  return pyStr(value);
}

/** Python's bool(value). */
export function truthy(value: unknown): boolean {
  if (value === null || value === undefined || value === false || value === 0 || value === "") return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === "object") return Object.keys(value).length > 0;
  // every other number (NaN included) and string is true
  return true;
}

/** Python's a == b (bool is an int: True == 1). */
export function pyEquals(a: unknown, b: unknown): boolean {
  const x = asNumber(a);
  const y = asNumber(b);
  if (x !== undefined && y !== undefined) return x === y;
  if (typeof a === "string" || typeof b === "string") return a === b;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((v, i) => pyEquals(v, b[i]));
  }
  // None == None only (undefined is None here too)
  if (a === null || b === null || a === undefined || b === undefined) return (a ?? null) === (b ?? null);
  if (typeof a === "object" && typeof b === "object") {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    return (
      ka.length === kb.length &&
      ka.every(
        (k) => k in b && pyEquals((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]),
      )
    );
  }
  return false;
}

/**
 * Python's ordering of a and b: negative, 0 or positive, or undefined where Python raises
 * TypeError (a number against a string, None against anything, …). Lists compare element-wise.
 */
export function pyCompare(a: unknown, b: unknown): number | undefined {
  const x = asNumber(a);
  const y = asNumber(b);
  if (x !== undefined && y !== undefined) return x < y ? -1 : x > y ? 1 : x === y ? 0 : undefined;
  if (typeof a === "string" && typeof b === "string") return a < b ? -1 : a > b ? 1 : 0;
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      if (pyEquals(a[i], b[i])) continue;
      return pyCompare(a[i], b[i]);
    }
    return a.length - b.length;
  }
  return undefined;
}

function asNumber(v: unknown): number | undefined {
  if (typeof v === "number") return v;
  if (typeof v === "boolean") return v ? 1 : 0;
  return undefined;
}
