// Microversion arithmetic the client tests need to know which commands a version allows, and a
// public key for keypair imports (from 2.92 Nova no longer generates keypairs).
import { generateKeyPairSync } from "node:crypto";

/** Whether `version` (a "2.x" string or "latest") is at least `min`. */
export function atLeast(version: string, min: string): boolean {
  if (version === "latest") return true;
  const [a, b] = version.split(".").map(Number);
  const [c, d] = min.split(".").map(Number);
  return a! > c! || (a === c && b! >= d!);
}

/** Whether `version` is below `max` (exclusive): the API a route was removed from. */
export function below(version: string, max: string): boolean {
  return !atLeast(version, max);
}

/** A fresh ssh-ed25519 public key in OpenSSH's one-line form, as `ssh-keygen` writes it. */
export function sshPublicKey(comment: string): string {
  const { publicKey } = generateKeyPairSync("ed25519");
  // The raw key is the last 32 bytes of the DER SubjectPublicKeyInfo.
  const raw = publicKey.export({ format: "der", type: "spki" }).subarray(-32);
  const field = (b: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(b.length);
    return Buffer.concat([len, b]);
  };
  const blob = Buffer.concat([field(Buffer.from("ssh-ed25519")), field(raw)]);
  return `ssh-ed25519 ${blob.toString("base64")} ${comment}`;
}
