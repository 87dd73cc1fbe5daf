// The API's options as the API uses them: the token table parsed, the rest as lib/config.ts's
// table declares and reads them (on every call; tests and the local runtime change them).
import { z } from "zod";
import { apiOptions, optionValue } from "../config.js";

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
  const raw = optionValue<string | null>("auth_tokens") ?? undefined;
  if (!tokenCache || tokenCache.raw !== raw) tokenCache = { raw, tokens: parseAuthTokens(raw) };
  return tokenCache.tokens;
}

export interface ApiSettings {
  /** NOVALESS_MULTI_INSTANCE_NAME_TEMPLATE: Nova's multi_instance_display_name_template. */
  multiInstanceNameTemplate: string;
  /** NOVALESS_API_URL: the public base URL for links; derived from the request when unset. */
  publicUrl: string | undefined;
}

export function apiSettings(): ApiSettings {
  const o = apiOptions();
  return {
    multiInstanceNameTemplate: o.multiInstanceNameTemplate,
    publicUrl: o.publicUrl,
  };
}
