// How each service reads a request's body as JSON, without I/O: what an empty body is, and its
// answer to one that is not JSON. The fronts read their bodies through it (front.ts readJson),
// Compute's validators too (validation/common.ts parseJsonBody).
import type { Refusal } from "./errors.js";

export interface BodyRules {
  /** its answer to a body that is not JSON */
  malformedBody: () => Refusal;
  /**
   * An empty body: JSON's null (Neutron reads it so), `{}` when empty or blank (Nova's: its schema
   * then names what is missing), or malformed (the default).
   */
  emptyBody?: "null" | "object" | "malformed";
}

export function parseBody(text: string | undefined, rules: BodyRules): unknown {
  if (rules.emptyBody === "object" && (text === undefined || text.trim() === "")) return {};
  if (!text && rules.emptyBody === "null") return null;
  try {
    return JSON.parse(text ?? "") as unknown;
  } catch {
    throw rules.malformedBody();
  }
}
