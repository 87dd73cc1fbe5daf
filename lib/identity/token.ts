// Keystone's tokens, self-contained like its Fernet tokens: the payload (who, which project, which
// roles, when it expires, its audit id) is signed with HMAC-SHA256, so validating one needs the
// key and no store. Not encrypted: it carries ids and names, no secret.
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { secretString } from "../aws/secrets.js";
import { identityOptions } from "../config.js";

export interface Named {
  id: string;
  name: string;
}

export interface TokenPayload {
  methods: string[];
  user: Named & { domain: Named };
  /** absent for an unscoped token */
  project?: Named & { domain: Named };
  roles: Named[];
  /** a token from an application credential: which one, and whether it may manage others */
  application_credential?: Named & { restricted: boolean };
  /** ISO 8601 */
  issued_at: string;
  expires_at: string;
  audit_ids: string[];
}

const PREFIX = "nl1.";

/** Keystone's [token] expiration: 3600 s unless NOVALESS_TOKEN_EXPIRATION says otherwise. */
export function tokenExpirationSeconds(): number {
  return identityOptions().tokenExpiration;
}

/** A new audit id, as Keystone's: 16 random bytes, urlsafe base64 without padding. */
export function newAuditId(): string {
  return randomBytes(16).toString("base64url");
}

function mac(key: Buffer, body: string): Buffer {
  return createHmac("sha256", key).update(body).digest();
}

export function signToken(payload: TokenPayload, key: Buffer): string {
  const body = Buffer.from(JSON.stringify(payload)).toString("base64url");
  return `${PREFIX}${body}.${mac(key, body).toString("base64url")}`;
}

/** The payload of a token this key signed and that has not expired at `now`, else undefined. */
export function verifyToken(token: string, key: Buffer, now: Date): TokenPayload | undefined {
  if (!token.startsWith(PREFIX)) return undefined;
  const [body, sig, extra] = token.slice(PREFIX.length).split(".");
  if (!body || !sig || extra !== undefined) return undefined;
  const given = Buffer.from(sig, "base64url");
  const expected = mac(key, body);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  let payload: TokenPayload;
  try {
    payload = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as TokenPayload;
  } catch {
    return undefined;
  }
  if (!(Date.parse(payload.expires_at) > now.getTime())) return undefined;
  return payload;
}

let localKey: Buffer | undefined;

/**
 * The signing key: from the Secrets Manager secret NOVALESS_TOKEN_KEY_SECRET names (deployed; read
 * through the cache of lib/aws/secrets.ts), else NOVALESS_TOKEN_KEY, else one generated for this
 * process (locally: tokens die with the process, as Fernet tokens do when the keys are replaced).
 */
export async function tokenKey(): Promise<Buffer> {
  const { tokenKeySecret: secretId, tokenKey: key } = identityOptions();
  const raw = secretId ? await secretString(secretId) : (key ?? undefined);
  if (raw !== undefined && raw !== "") return createHash("sha256").update(raw).digest();
  if (secretId) throw new Error(`the token key secret ${secretId} is empty`);
  localKey ??= randomBytes(32);
  return localKey;
}
