// /os-keypairs: a user's SSH keys (or x509 certificates, 2.2+), created from a given public key or
// generated (until 2.91), listed (2.35 paging), shown and deleted. An admin may name another user
// (2.10 `user_id`); a member acts on their own keys only.
import type { Keypair } from "../../catalog/keypairs.js";
import {
  generateSshKey,
  generateX509Key,
  InvalidKeypair,
  sshFingerprint,
  x509Fingerprint,
} from "../../catalog/ssh-keys.js";
import { ceiling } from "../../quotas/quotas.js";
import { badRequest, conflict, forbidden, notFound } from "../errors.js";
import { forVersion } from "../microversion.js";
import type { ApiResult, Route, RouteCall } from "../request.js";
import { parseJsonBody } from "../validation/common.js";
import {
  checkKeypairQuery,
  KEYPAIR_RULES,
  keypairOwner,
  parseCreateKeypair,
  parseKeypairPage,
  queryUserId,
} from "../validation/keypairs.js";
import { keypairCreateView, keypairIndexView, keypairShowView } from "../views/keypairs.js";

const CREATED = [
  { max: "2.1", value: 200 },
  { min: "2.2", value: 201 },
];
const DELETED = [
  { max: "2.1", value: 202 },
  { min: "2.2", value: 204 },
];

const keypairNotFound = (name: string, userId: string) =>
  notFound(`Keypair ${name} not found for user ${userId}`);

/** The fingerprint of an imported key, or a fresh key pair when none was given. */
function keyMaterial(
  type: Keypair["type"],
  publicKey: string | undefined,
  userId: string,
): { public_key: string; fingerprint: string; private_key?: string } {
  try {
    if (publicKey !== undefined) {
      const fingerprint = type === "x509" ? x509Fingerprint(publicKey) : sshFingerprint(publicKey);
      return { public_key: publicKey, fingerprint };
    }
    return type === "x509" ? generateX509Key(userId) : generateSshKey();
  } catch (e) {
    if (e instanceof InvalidKeypair) throw badRequest(e.message);
    throw e;
  }
}

export async function createKeypairRoute({ ctx, deps, body }: RouteCall): Promise<ApiResult> {
  const v = ctx.version;
  const req = parseCreateKeypair(parseJsonBody(body), v, ctx.auth);
  const material = keyMaterial(req.type, req.public_key, req.user_id);
  const r = await deps.createKeypair(
    {
      name: req.name,
      user_id: req.user_id,
      type: req.type,
      public_key: material.public_key,
      fingerprint: material.fingerprint,
      created_at: deps.now().toISOString(),
    },
    // the project's key_pairs limit, counted per user as Nova does
    ceiling((await deps.quotas.getProjectLimits(ctx.auth.project_id)).key_pairs),
  );
  if (!r.ok) {
    throw r.reason === "exists"
      ? conflict(`Key pair '${req.name}' already exists.`)
      : forbidden("Quota exceeded, too many key pairs.");
  }
  ctx.logFields.keypair = req.name;
  const view = keypairCreateView(r.keypair, { private_key: material.private_key }, v);
  return { status: forVersion(CREATED, v), body: { keypair: view } };
}

export async function listKeypairsRoute({ ctx, deps, query }: RouteCall): Promise<ApiResult> {
  const v = ctx.version;
  checkKeypairQuery(query, v, true);
  const owner = keypairOwner(queryUserId(query, v), ctx.auth, KEYPAIR_RULES.index);
  const page = parseKeypairPage(query, v);
  const r = await deps.listKeypairs(owner, page);
  if (!r.ok) throw badRequest(`Marker ${page.marker} could not be found.`);
  const body: Record<string, unknown> = {
    keypairs: r.keypairs.map((k) => ({ keypair: keypairIndexView(k, undefined, v) })),
  };
  // Nova's collection links: a full page has a next one, from its last name
  if (page.limit !== undefined && r.keypairs.length > 0 && r.keypairs.length === page.limit) {
    const next = new URLSearchParams();
    for (const [k, vs] of Object.entries(query)) if (k !== "marker") for (const x of vs) next.append(k, x);
    next.set("marker", r.keypairs[r.keypairs.length - 1]!.name);
    body.keypairs_links = [{ rel: "next", href: `${ctx.baseUrl}/v2.1/os-keypairs?${next.toString()}` }];
  }
  return { status: 200, body };
}

export async function showKeypairRoute({ ctx, deps, params, query }: RouteCall): Promise<ApiResult> {
  checkKeypairQuery(query, ctx.version, false);
  const owner = keypairOwner(queryUserId(query, ctx.version), ctx.auth, KEYPAIR_RULES.show);
  const k = await deps.getKeypair(owner, params.name!);
  if (!k) throw keypairNotFound(params.name!, owner);
  return { status: 200, body: { keypair: keypairShowView(k, undefined, ctx.version) } };
}

export async function deleteKeypairRoute({ ctx, deps, params, query }: RouteCall): Promise<ApiResult> {
  checkKeypairQuery(query, ctx.version, false);
  const owner = keypairOwner(queryUserId(query, ctx.version), ctx.auth, KEYPAIR_RULES.delete);
  if (!(await deps.deleteKeypair(owner, params.name!))) throw keypairNotFound(params.name!, owner);
  ctx.logFields.keypair = params.name;
  return { status: forVersion(DELETED, ctx.version) };
}

export const keypairRoutes: Route[] = [
  { method: "GET", pattern: "/os-keypairs", handler: listKeypairsRoute },
  { method: "POST", pattern: "/os-keypairs", handler: createKeypairRoute },
  { method: "GET", pattern: "/os-keypairs/:name", handler: showKeypairRoute },
  { method: "DELETE", pattern: "/os-keypairs/:name", handler: deleteKeypairRoute },
];
