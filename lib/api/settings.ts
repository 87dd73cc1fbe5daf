// The API's own options, read from the environment on every call (cheap; tests and the local
// runtime change them). They belong with lib/config.ts in spirit; they live here because that
// file is shared and these concern the API only.
import { z } from "zod";

export interface Principal {
  user_id: string;
  project_id: string;
  roles: string[];
}

/** The tokens accepted when NOVALESS_AUTH_TOKENS is unset: one admin, one member. */
export const DEFAULT_AUTH_TOKENS: Readonly<Record<string, Principal>> = Object.freeze({
  "admin-token": { user_id: "admin", project_id: "admin", roles: ["admin", "member"] },
  "demo-token": { user_id: "demo", project_id: "demo", roles: ["member"] },
});

const principal = z.strictObject({
  user_id: z.string().min(1),
  project_id: z.string().min(1),
  roles: z.array(z.string()),
});
const tokenTable = z.record(z.string().min(1), principal);

/** NOVALESS_AUTH_TOKENS: a JSON object token → {user_id, project_id, roles}. Throws when invalid. */
export function parseAuthTokens(raw: string | undefined): Record<string, Principal> {
  if (raw === undefined || raw.trim() === "") return { ...DEFAULT_AUTH_TOKENS };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (e) {
    throw new Error(`NOVALESS_AUTH_TOKENS is not JSON: ${(e as Error).message}`);
  }
  const r = tokenTable.safeParse(json);
  if (!r.success) {
    const i = r.error.issues[0];
    throw new Error(`NOVALESS_AUTH_TOKENS is invalid at ${i?.path.join(".") || "(root)"}: ${i?.message}`);
  }
  return r.data;
}

let tokenCache: { raw: string | undefined; tokens: Record<string, Principal> } | undefined;

/** The token table for the current environment (parsed once per distinct value). */
export function authTokens(): Record<string, Principal> {
  const raw = process.env.NOVALESS_AUTH_TOKENS;
  if (!tokenCache || tokenCache.raw !== raw) tokenCache = { raw, tokens: parseAuthTokens(raw) };
  return tokenCache.tokens;
}

export interface ApiSettings {
  /** NOVALESS_MAX_COUNT: most instances one create may ask for (Nova's instance quota's role). */
  maxCount: number;
  /** NOVALESS_MULTI_INSTANCE_NAME_TEMPLATE: Nova's multi_instance_display_name_template. */
  multiInstanceNameTemplate: string;
  /** NOVALESS_API_URL: the public base URL for links; derived from the request when unset. */
  publicUrl: string | undefined;
}

function int(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`configuration ${name}=${raw} is not a positive integer`);
  return n;
}

export function apiSettings(): ApiSettings {
  return {
    maxCount: int("NOVALESS_MAX_COUNT", 100),
    multiInstanceNameTemplate: process.env.NOVALESS_MULTI_INSTANCE_NAME_TEMPLATE || "%(name)s-%(count)d",
    publicUrl: process.env.NOVALESS_API_URL?.replace(/\/+$/, "") || undefined,
  };
}
