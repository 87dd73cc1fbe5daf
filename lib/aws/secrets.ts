// Secrets read at run time (never in a template or an environment), cached for a while so a
// warm Lambda does not call Secrets Manager on every request. The endpoint comes from
// AWS_ENDPOINT_URL_SECRETS_MANAGER when set, like every other client here.
import { GetSecretValueCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";

/** How long a secret's value is reused before it is read again: a rotated value is live within it. */
export const SECRET_TTL_MS = 5 * 60_000;

let client: SecretsManagerClient | undefined;
const cache = new Map<string, { value: string; expires: number }>();

function secretsManager(): SecretsManagerClient {
  client ??= new SecretsManagerClient({ maxAttempts: 5 });
  return client;
}

/** The current SecretString of `secretId` (a name or an ARN), read at most once per TTL. */
export async function secretString(secretId: string, now = Date.now()): Promise<string> {
  const hit = cache.get(secretId);
  if (hit && hit.expires > now) return hit.value;
  let value: string | undefined;
  try {
    value = (await secretsManager().send(new GetSecretValueCommand({ SecretId: secretId }))).SecretString;
  } catch (e) {
    throw new Error(`reading secret ${secretId} failed: ${(e as Error).name}: ${(e as Error).message}`, {
      cause: e,
    });
  }
  if (value === undefined)
    throw new Error(`secret ${secretId} has no SecretString (binary secrets are not read)`);
  cache.set(secretId, { value, expires: now + SECRET_TTL_MS });
  return value;
}

/** Forget cached values and the client (tests point the endpoint elsewhere between runs). */
export function resetSecrets(): void {
  cache.clear();
  client?.destroy();
  client = undefined;
}
