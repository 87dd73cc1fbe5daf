// Password hashes as Keystone keeps them in spirit (a slow, salted hash; never the password), with
// node:crypto's scrypt. The stored string carries its parameters, so they can be raised later
// without breaking the hashes already stored: `scrypt$N$r$p$<salt b64>$<hash b64>`.
import { randomBytes, scrypt, timingSafeEqual } from "node:crypto";
import { identityOptions } from "../config.js";

const R = 8;
const P = 1;
const KEY_LEN = 32;

function derive(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password, salt, KEY_LEN, { N: n, r, p, maxmem: 256 * n * r }, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

/** `[identity] password_hash_rounds`: N = 2^rounds for the hashes made from now on. */
export async function hashPassword(password: string): Promise<string> {
  const n = 2 ** identityOptions().passwordHashRounds;
  const salt = randomBytes(16);
  const key = await derive(password, salt, n, R, P);
  return `scrypt$${n}$${R}$${P}$${salt.toString("base64")}$${key.toString("base64")}`;
}

/** Whether `password` matches `stored` (false for a hash in any other format). */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split("$");
  if (scheme !== "scrypt" || !n || !r || !p || salt === undefined || hash === undefined) return false;
  const expected = Buffer.from(hash, "base64");
  const key = await derive(password, Buffer.from(salt, "base64"), Number(n), Number(r), Number(p));
  return key.length === expected.length && timingSafeEqual(key, expected);
}
