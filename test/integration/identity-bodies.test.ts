// Keystone's answers to malformed bodies, before and after the bodies were checked with zod at the
// front (lib/api/identity/bodies.ts): every case's status and body as the hand checks in
// lib/identity answered them (fixtures/identity-bodies.json, recorded on a6dde18 with
// IDENTITY_BODIES_RECORD=1), compared with today's answers; the few that changed are listed.
import { readFileSync, writeFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import { beforeAll, expect, it } from "vitest";
import { defaultDeps } from "../../lib/api/deps.js";
import { handleHttp } from "../../lib/api/router.js";
import { seedCatalog } from "../../lib/catalog/repo.js";
import { seedIdentity } from "../../lib/identity/seed.js";
import { useLocalAws } from "./local-aws.js";

useLocalAws();

const FIXTURE = new URL("./fixtures/identity-bodies.json", import.meta.url);
const deps = { ...defaultDeps, now: () => new Date("2026-03-01T12:00:00.000Z") };
const RAW = Symbol("raw");
type Body = unknown | { [RAW]: string };
const raw = (text: string) => ({ [RAW]: text });
const isRaw = (b: Body): b is { [RAW]: string } => !!b && typeof b === "object" && RAW in b;

async function call(method: string, path: string, body: Body, token?: string) {
  const text = isRaw(body) ? body[RAW] : JSON.stringify(body);
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (token) headers["x-auth-token"] = token;
  return handleHttp({ method, path, headers, body: text, baseUrl: "https://cloud.example.org" }, deps);
}

const long = "a".repeat(256);
const longPassword = "p".repeat(4097);
const pw = (user: object, extra: object = {}) => ({
  auth: { identity: { methods: ["password"], password: { user } }, ...extra },
});
const admin = { name: "admin", domain: { id: "default" }, password: "admin-secret" };

/** The malformed bodies, by route: `{id}` is a domain, project or user that exists; `{user}` the admin. */
const CASES: [method: string, path: string, body: Body][] = [
  ...(["/v3/domains", "/v3/projects", "/v3/users", "/v3/roles"] as const).flatMap((p): typeof CASES =>
    [raw(""), raw("not json"), raw("[]"), raw("null"), raw("7"), {}, { x: 1 }].map((b) => ["POST", p, b]),
  ),
  ...(["domain", "project", "user", "role"] as const).flatMap((k): typeof CASES =>
    [
      "x",
      [],
      null,
      {},
      { name: 5 },
      { name: null },
      { name: "" },
      { name: "   " },
      { name: long },
      { name: "ok", enabled: "yes" },
      { name: "ok", description: 5 },
      { name: 5, enabled: "yes" },
      { name: "ok", domain_id: 5 },
      { name: "ok", domain_id: null },
      { name: "ok", domain_id: "nope" },
      { name: 5, domain_id: "nope" },
    ].map((v) => ["POST", `/v3/${k}s`, { [k]: v }]),
  ),
  ["POST", "/v3/domains", { domain: { name: "ok", explicit_domain_id: 5 } }],
  ["POST", "/v3/domains", { domain: { name: "ok", explicit_domain_id: null } }],
  ["POST", "/v3/domains", { domain: { name: "ok", enabled: 1, description: 2 } }],
  ...[
    { is_domain: "no" },
    { is_domain: true },
    { is_domain: true, name: 5 },
    { parent_id: 5 },
    { parent_id: "nope" },
    { parent_id: "nope", name: 5 },
    { tags: "a" },
    { tags: ["a/b"] },
    { tags: ["a,b"] },
    { tags: [""] },
    { tags: [1] },
    { tags: [long] },
    { tags: "a", enabled: "x" },
  ].map((v): (typeof CASES)[number] => ["POST", "/v3/projects", { project: { name: "ok", ...v } }]),
  ...[{ password: 5 }, { password: longPassword }, { password: 5, name: 5 }, { password: null, name: 5 }].map(
    (v): (typeof CASES)[number] => ["POST", "/v3/users", { user: { name: "ok", ...v } }],
  ),
  ["POST", "/v3/users", { user: { password: longPassword, domain_id: "nope" } }],
  ["POST", "/v3/roles", { role: { domain_id: "d" } }],
  ["POST", "/v3/roles", { role: { name: 5, domain_id: "d" } }],
  ["POST", "/v3/roles", { role: { name: "ok", domain_id: null, description: 5 } }],
  ...(["domain", "project", "user"] as const).flatMap((k): typeof CASES =>
    [
      raw("not json"),
      {},
      { [k]: [] },
      { [k]: "x" },
      { [k]: { name: 5 } },
      { [k]: { name: "" } },
      { [k]: { name: null } },
      { [k]: { enabled: "x" } },
      { [k]: { description: 5 } },
      { [k]: { domain_id: "other" } },
      { [k]: { domain_id: "other", name: 5 } },
      { [k]: { is_domain: true } },
      { [k]: { parent_id: "other" } },
      { [k]: { tags: [1] } },
      { [k]: { password: 5 } },
      { [k]: { password: longPassword } },
      { [k]: { password: longPassword, enabled: "x" } },
    ].flatMap((b): typeof CASES => [
      ["PATCH", `/v3/${k}s/{id}`, b],
      ["PATCH", `/v3/${k}s/missing`, b],
    ]),
  ),
  ...[
    {},
    { user: [] },
    { user: {} },
    { user: { original_password: 1 } },
    { user: { original_password: "x" } },
    { user: { original_password: "x", password: 2 } },
    { user: { original_password: "wrong", password: "new" } },
    { user: { original_password: "wrong", password: longPassword } },
    { user: { original_password: "member-secret", password: longPassword } },
  ].flatMap((b): typeof CASES => [
    ["POST", "/v3/users/{id}/password", b],
    ["POST", "/v3/users/missing/password", b],
  ]),
  ...[
    raw("not json"),
    {},
    { application_credential: 5 },
    { application_credential: "x" },
    { application_credential: [] },
    { application_credential: {} },
    { application_credential: { name: "" } },
    { application_credential: { name: long } },
    { application_credential: { name: 5 } },
    { application_credential: { name: "c", secret: 5 } },
    { application_credential: { name: "c", expires_at: "garbage" } },
    { application_credential: { name: "c", expires_at: 5 } },
    { application_credential: { name: "c", expires_at: "2000-01-01T00:00:00Z" } },
    { application_credential: { name: "c", access_rules: [{}] } },
    { application_credential: { name: "c", access_rules: "x" } },
    { application_credential: { name: "c", roles: [{ id: "nope" }] } },
    { application_credential: { name: "c", roles: [{ name: "nope" }] } },
    { application_credential: { name: "c", roles: [{}] } },
    { application_credential: { name: "c", roles: [5] } },
    { application_credential: { name: "c", secret: 5, expires_at: "garbage" } },
  ].map((b): (typeof CASES)[number] => ["POST", "/v3/users/{user}/application_credentials", b]),
  ["POST", "/v3/users/{id}/application_credentials", { application_credential: { name: 5 } }],
  ...[
    raw(""),
    raw("not json"),
    raw("[]"),
    {},
    { auth: 5 },
    { auth: {} },
    { auth: { identity: 5 } },
    { auth: { identity: {} } },
    { auth: { identity: { methods: [] } } },
    { auth: { identity: { methods: "password" } } },
    { auth: { identity: { methods: ["kerberos"] } } },
    { auth: { identity: { methods: [5] } } },
    { auth: { identity: { methods: ["password"] } } },
    { auth: { identity: { methods: ["password"], password: 5 } } },
    pw({}),
    pw({ password: 5 }),
    pw({ password: "x" }),
    pw({ id: 5, password: "x" }),
    pw({ name: "admin", password: "x" }),
    pw({ name: "admin", domain: 5, password: "x" }),
    pw({ name: "admin", domain: {}, password: "x" }),
    pw({ name: "admin", domain: { id: 5 }, password: "x" }),
    pw({ name: "admin", domain: { name: "nope" }, password: "x" }),
    pw({ name: "admin", domain: { id: "default" }, password: "wrong" }),
    pw({ id: "nope", password: "wrong" }),
    pw({ name: 5, domain: { id: "default" }, password: "x" }),
    pw({ ...admin, password: "wrong" }, { scope: { domain: { id: "default" } } }),
    pw(admin, { scope: { domain: { id: "default" } } }),
    pw(admin, { scope: "x" }),
    pw(admin, { scope: null }),
    pw(admin, { scope: 5 }),
    pw(admin, { scope: { project: 5 } }),
    pw(admin, { scope: { project: {} } }),
    pw(admin, { scope: { project: { id: 5 } } }),
    pw(admin, { scope: { project: { name: "admin" } } }),
    pw(admin, { scope: { project: { name: "admin", domain: {} } } }),
    pw(admin, { scope: { project: { name: "admin", domain: { name: "nope" } } } }),
    pw(admin, { scope: { project: { id: "nope" } } }),
    pw(admin, { scope: { project: { name: 5, domain: { id: "default" } } } }),
    { auth: { identity: { methods: ["token"] } } },
    { auth: { identity: { methods: ["token"], token: 5 } } },
    { auth: { identity: { methods: ["token"], token: {} } } },
    { auth: { identity: { methods: ["token"], token: { id: 5 } } } },
    { auth: { identity: { methods: ["token"], token: { id: "nope" } } } },
    { auth: { identity: { methods: ["application_credential"] } } },
    { auth: { identity: { methods: ["application_credential"], application_credential: 5 } } },
    { auth: { identity: { methods: ["application_credential"], application_credential: {} } } },
    ...[
      { secret: 5 },
      { secret: "s" },
      { secret: "s", id: 5 },
      { secret: "s", id: "nope" },
      { secret: "s", name: "n" },
      { secret: "s", name: "n", user: 5 },
      { secret: "s", name: "n", user: {} },
      { secret: "s", name: "n", user: [] },
      { secret: "s", name: "n", user: { name: "admin" } },
      { secret: "s", name: "n", user: { id: "nope" } },
      { secret: "s", name: "n", user: { id: "admin" } },
      { secret: "s", name: 5, user: { id: "admin" } },
    ].map((a) => ({
      auth: { identity: { methods: ["application_credential"], application_credential: a } },
    })),
  ].map((b): (typeof CASES)[number] => ["POST", "/v3/auth/tokens", b]),
];

const short = (label: string) => label.replace(/p{4097}/g, "p×4097").replace(/a{256}/g, "a×256");

type Answer = { case: string; status: number; body?: unknown };
let answers: Answer[];

beforeAll(async () => {
  await seedCatalog();
  await seedIdentity({ adminPassword: "admin-secret", demo: true });
  const login = await call("POST", "/identity/v3/auth/tokens", {
    auth: { ...pw(admin).auth, scope: { project: { name: "admin", domain: { id: "default" } } } },
  });
  const token = login.headers["x-subject-token"]!;
  const userId = (JSON.parse(login.body) as { token: { user: { id: string } } }).token.user.id;
  const made = async (kind: string, body: object) => {
    const r = await call("POST", `/identity/v3/${kind}s`, { [kind]: body }, token);
    return (JSON.parse(r.body) as Record<string, { id: string }>)[kind]!.id;
  };
  const ids: Record<string, string> = {
    domain: await made("domain", { name: "bodies-domain" }),
    project: await made("project", { name: "bodies-project" }),
    user: await made("user", { name: "bodies-user", password: "member-secret" }),
  };
  answers = [];
  for (const [method, path, body] of CASES) {
    const kind = path.split("/")[2]!.replace(/s$/, "");
    const at = path.replace("{id}", ids[kind] ?? "").replace("{user}", userId);
    const r = await call(method, `/identity${at}`, body, token);
    // the ids made here are new on each run: the answer names them by their place
    let text = r.body;
    for (const [k, id] of Object.entries(ids)) text = text.replaceAll(id, `{${k}}`);
    const shown: unknown = r.status < 300 ? undefined : JSON.parse(text);
    const label = isRaw(body) ? `raw:${body[RAW]}` : JSON.stringify(body);
    answers.push({
      case: `${method} ${path} ${short(label)}`,
      status: r.status,
      ...(shown === undefined ? {} : { body: shown }),
    });
  }
  if (process.env.IDENTITY_BODIES_RECORD === "1")
    writeFileSync(FIXTURE, `${JSON.stringify(answers, null, 1)}\n`);
}, 120_000);

const nameNotString = "Invalid input for field/attribute name. Value: 5. 5 is not of type 'string'";
/**
 * Where the answer changed: a body both malformed and failing a rule on stored data is now refused
 * for its form first, as Keystone validates a body's schema before its manager reads anything
 * (keystone/api/projects.py, users.py: `validation.lazy_validate` before `create_project` etc.).
 */
const CHANGED: Record<string, [status: number, message: string]> = {
  'POST /v3/projects {"project":{"name":5,"domain_id":"nope"}}': [400, nameNotString],
  'POST /v3/users {"user":{"name":5,"domain_id":"nope"}}': [400, nameNotString],
  'POST /v3/projects {"project":{"name":5,"parent_id":"nope"}}': [400, nameNotString],
  'POST /v3/users {"user":{"password":"p×4097","domain_id":"nope"}}': [
    403,
    "The password length must be less than or equal to 4096. The server could not comply with the request because the password is invalid.",
  ],
  'PATCH /v3/projects/{id} {"project":{"domain_id":"other","name":5}}': [400, nameNotString],
  'PATCH /v3/users/{id} {"user":{"domain_id":"other","name":5}}': [400, nameNotString],
};

it("answers every malformed body as the hand checks did, but where a check now comes first", () => {
  const recorded = JSON.parse(readFileSync(FIXTURE, "utf8")) as Answer[];
  const title: Record<number, string> = { 400: "Bad Request", 403: "Forbidden" };
  const expected = recorded.map((a): Answer => {
    const changed = CHANGED[a.case];
    if (!changed) return a;
    const [status, message] = changed;
    return { ...a, status, body: { error: { code: status, message, title: title[status] } } };
  });
  expect(recorded.filter((a) => CHANGED[a.case]).length).toBe(Object.keys(CHANGED).length);
  expect(answers.length).toBe(expected.length);
  const differ = answers.filter((a, i) => !isDeepStrictEqual(a, expected[i]));
  expect(differ).toEqual([]);
});
