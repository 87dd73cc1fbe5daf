// Key material for keypairs, as nova/crypto.py treats it: an OpenSSH public key is checked by
// parsing it (its blob must hold the key its prefix names) and fingerprinted as the MD5 of the
// blob, `aa:bb:…`; an x509 certificate by its SHA-1; a generated key is RSA 2048 whose private half
// is PKCS#1 PEM (what paramiko writes) and whose public half reads `ssh-rsa … Generated-by-Nova`.
import { createHash, createPublicKey, generateKeyPairSync, X509Certificate } from "node:crypto";
import forge from "node-forge";

/** Nova's InvalidKeypair: "Keypair data is invalid: <reason>" (a 400). */
export class InvalidKeypair extends Error {
  constructor(reason: string) {
    super(`Keypair data is invalid: ${reason}`);
    this.name = "InvalidKeypair";
  }
}

function colonHex(digest: Buffer): string {
  return digest.toString("hex").replace(/(..)(?!$)/g, "$1:");
}

/** SSH wire format: uint32 length + bytes, read one after another. */
class Wire {
  private at = 0;
  constructor(private readonly buf: Buffer) {}
  bytes(): Buffer {
    if (this.at + 4 > this.buf.length) throw new Error("truncated");
    const n = this.buf.readUInt32BE(this.at);
    const start = this.at + 4;
    if (start + n > this.buf.length) throw new Error("truncated");
    this.at = start + n;
    return this.buf.subarray(start, start + n);
  }
  string(): string {
    return this.bytes().toString("latin1");
  }
  done(): boolean {
    return this.at === this.buf.length;
  }
}

/** An mpint as JWK's unsigned big-endian base64url (the sign byte dropped). */
function mpint(b: Buffer): string {
  let i = 0;
  while (i < b.length - 1 && b[i] === 0) i++;
  return b.subarray(i).toString("base64url");
}

const EC_CURVES: Record<string, { crv: string; size: number }> = {
  nistp256: { crv: "P-256", size: 32 },
  nistp384: { crv: "P-384", size: 48 },
  nistp521: { crv: "P-521", size: 66 },
};

/** Throws unless the blob is a well-formed key of `type` that node's crypto can load. */
function loadBlob(type: string, blob: Buffer): void {
  const w = new Wire(blob);
  if (w.string() !== type) throw new Error("key type mismatch");
  if (type === "ssh-rsa") {
    const e = w.bytes();
    const n = w.bytes();
    if (!w.done()) throw new Error("trailing data");
    createPublicKey({ key: { kty: "RSA", e: mpint(e), n: mpint(n) }, format: "jwk" });
  } else if (type === "ssh-ed25519") {
    const x = w.bytes();
    if (!w.done() || x.length !== 32) throw new Error("bad ed25519 key");
    createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: x.toString("base64url") }, format: "jwk" });
  } else if (type.startsWith("ecdsa-sha2-")) {
    const name = w.string();
    const curve = EC_CURVES[name];
    const q = w.bytes();
    if (!curve || type !== `ecdsa-sha2-${name}`) throw new Error("bad curve");
    if (!w.done() || q.length !== 1 + 2 * curve.size || q[0] !== 4) throw new Error("bad point");
    const x = q.subarray(1, 1 + curve.size).toString("base64url");
    const y = q.subarray(1 + curve.size).toString("base64url");
    createPublicKey({ key: { kty: "EC", crv: curve.crv, x, y }, format: "jwk" });
  } else {
    throw new Error(`unsupported key type ${type}`);
  }
}

/** crypto.generate_fingerprint: the MD5 of an OpenSSH public key's blob, or InvalidKeypair. */
export function sshFingerprint(publicKey: string): string {
  try {
    const [type, b64] = publicKey.trim().split(/\s+/);
    if (!type || !b64 || !/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) throw new Error("not an OpenSSH key");
    const blob = Buffer.from(b64, "base64");
    loadBlob(type, blob);
    return colonHex(createHash("md5").update(blob).digest());
  } catch {
    throw new InvalidKeypair("failed to generate fingerprint");
  }
}

/** crypto.generate_x509_fingerprint: the SHA-1 of a PEM certificate, or InvalidKeypair. */
export function x509Fingerprint(pem: string): string {
  try {
    return colonHex(createHash("sha1").update(new X509Certificate(pem).raw).digest());
  } catch (e) {
    throw new InvalidKeypair(`failed to generate X509 fingerprint. Error message: ${(e as Error).message}`);
  }
}

function sshString(b: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(b.length);
  return Buffer.concat([len, b]);
}

/** A positive mpint: big-endian with a 0 byte in front when the high bit is set. */
function sshMpint(b64url: string): Buffer {
  const raw = Buffer.from(b64url, "base64url");
  return sshString((raw[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), raw]) : raw);
}

export interface GeneratedKey {
  private_key: string;
  public_key: string;
  fingerprint: string;
}

/** crypto.generate_key_pair: a fresh RSA 2048 key. */
export function generateSshKey(): GeneratedKey {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const jwk = publicKey.export({ format: "jwk" });
  const blob = Buffer.concat([sshString(Buffer.from("ssh-rsa")), sshMpint(jwk.e!), sshMpint(jwk.n!)]);
  const public_key = `ssh-rsa ${blob.toString("base64")} Generated-by-Nova`;
  return {
    private_key: privateKey.export({ type: "pkcs1", format: "pem" }).toString(),
    public_key,
    fingerprint: colonHex(createHash("md5").update(blob).digest()),
  };
}

/**
 * crypto.generate_winrm_x509_cert: an RSA 2048 key and a self-signed certificate for the user
 * (CN and a UPN of `<user>@localhost`, client authentication, ten years), as Nova generates an
 * x509 key pair (2.2–2.91). node:crypto makes the key; node-forge the certificate (node:crypto
 * cannot issue one).
 */
export function generateX509Key(userId: string, now = new Date()): GeneratedKey {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const pem = privateKey.export({ type: "pkcs1", format: "pem" }).toString();
  const key = forge.pki.privateKeyFromPem(pem);
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.setRsaPublicKey(key.n, key.e);
  cert.serialNumber = `01${createHash("sha1").update(`${userId}:${now.toISOString()}`).digest("hex").slice(0, 16)}`;
  cert.validity.notBefore = now;
  cert.validity.notAfter = new Date(now.getTime() + 10 * 365 * 86400 * 1000);
  const subject = [{ name: "commonName", value: userId }];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: "extKeyUsage", clientAuth: true },
    {
      name: "subjectAltName",
      altNames: [{ type: 0, value: `${userId}@localhost` }],
    },
  ]);
  cert.sign(key, forge.md.sha256.create());
  const public_key = forge.pki.certificateToPem(cert);
  return { private_key: pem, public_key, fingerprint: x509Fingerprint(public_key) };
}
