// IAM policy evaluation, pure: an explicit Deny (identity- or resource-based) wins; otherwise an
// Allow from either grants; otherwise the request is implicitly denied. An Allow matches when its
// action (case-insensitive, `*`/`?` wildcards), its resource (wildcards, policy variables) and
// every condition match. The condition operators are the ones a stack like ours uses; an unknown
// operator is an error rather than a silent match.

export interface Statement {
  Sid?: string;
  Effect: "Allow" | "Deny";
  Action?: string[];
  NotAction?: string[];
  Resource?: string[];
  NotResource?: string[];
  /** resource-based policies only */
  Principal?: "*" | { AWS?: string | string[]; Service?: string | string[] };
  /** operator → condition key → values */
  Condition?: Record<string, Record<string, string[]>>;
}

/** condition keys of the request: aws:SecureTransport, aws:PrincipalTag/…, aws:SourceArn… */
export type RequestContext = Record<string, string | string[] | undefined>;

export interface AuthzRequest {
  /** service:Action, e.g. dynamodb:GetItem */
  action: string;
  resource: string;
  /** the caller's role ARN (aws:PrincipalArn), matched against resource policies' principals */
  principalArn: string;
  context: RequestContext;
}

export type Decision =
  | { allowed: true }
  | { allowed: false; reason: "explicit-deny-identity" | "explicit-deny-resource" | "implicit-deny" };

export function evaluate(identity: Statement[], resourcePolicy: Statement[], req: AuthzRequest): Decision {
  const onResource = resourcePolicy.filter((s) => principalMatches(s, req.principalArn));
  if (identity.some((s) => s.Effect === "Deny" && statementMatches(s, req)))
    return { allowed: false, reason: "explicit-deny-identity" };
  if (onResource.some((s) => s.Effect === "Deny" && statementMatches(s, req)))
    return { allowed: false, reason: "explicit-deny-resource" };
  if ([...identity, ...onResource].some((s) => s.Effect === "Allow" && statementMatches(s, req)))
    return { allowed: true };
  return { allowed: false, reason: "implicit-deny" };
}

function principalMatches(s: Statement, principalArn: string): boolean {
  if (s.Principal === undefined) return false;
  if (s.Principal === "*") return true;
  const aws = [s.Principal.AWS ?? []].flat();
  return aws.includes("*") || aws.includes(principalArn);
}

function statementMatches(s: Statement, req: AuthzRequest): boolean {
  const action = s.Action
    ? s.Action.some((p) => wildcard(p, req.action, true))
    : !(s.NotAction ?? []).some((p) => wildcard(p, req.action, true));
  if (!action) return false;
  const sub = (p: string) => substitute(p, req.context);
  const resource = s.Resource
    ? s.Resource.some((p) => wildcard(sub(p), req.resource, false))
    : s.NotResource
      ? !s.NotResource.some((p) => wildcard(sub(p), req.resource, false))
      : true;
  if (!resource) return false;
  return Object.entries(s.Condition ?? {}).every(([op, keys]) =>
    Object.entries(keys).every(([key, values]) => conditionMatches(op, req.context[key], values.map(sub))),
  );
}

/** `*` any run of characters, `?` one character; the rest literal. */
/** Compiled patterns: a fleet's gateway matches the same few thousand patterns again and again. */
const patterns = new Map<string, RegExp>();
const PATTERNS_MAX = 50_000;

export function wildcard(pattern: string, value: string, ignoreCase: boolean): boolean {
  if (!pattern.includes("*") && !pattern.includes("?"))
    return ignoreCase ? pattern.toLowerCase() === value.toLowerCase() : pattern === value;
  const key = `${ignoreCase ? "i" : "s"}${pattern}`;
  let re = patterns.get(key);
  if (!re) {
    const source = pattern
      .split("")
      .map((ch) => (ch === "*" ? ".*" : ch === "?" ? "." : ch.replace(/[.+^${}()|[\]\\]/g, "\\$&")))
      .join("");
    re = new RegExp(`^${source}$`, ignoreCase ? "is" : "s");
    if (patterns.size >= PATTERNS_MAX) patterns.clear();
    patterns.set(key, re);
  }
  return re.test(value);
}

/** Policy variables such as `${aws:PrincipalTag/host}`; an unknown one matches nothing. */
function substitute(text: string, context: RequestContext): string {
  return text.replace(/\$\{([^}]+)\}/g, (_, key: string) => {
    const v = context[key];
    return typeof v === "string" ? v : "\u0000";
  });
}

type Compare = (policy: string, actual: string) => boolean;
const COMPARE: Record<string, { compare: Compare; negated?: boolean }> = {
  StringEquals: { compare: (p, a) => p === a },
  StringNotEquals: { compare: (p, a) => p === a, negated: true },
  StringEqualsIgnoreCase: { compare: (p, a) => p.toLowerCase() === a.toLowerCase() },
  StringNotEqualsIgnoreCase: { compare: (p, a) => p.toLowerCase() === a.toLowerCase(), negated: true },
  StringLike: { compare: (p, a) => wildcard(p, a, false) },
  StringNotLike: { compare: (p, a) => wildcard(p, a, false), negated: true },
  ArnEquals: { compare: (p, a) => wildcard(p, a, false) },
  ArnLike: { compare: (p, a) => wildcard(p, a, false) },
  ArnNotEquals: { compare: (p, a) => wildcard(p, a, false), negated: true },
  ArnNotLike: { compare: (p, a) => wildcard(p, a, false), negated: true },
  Bool: { compare: (p, a) => p.toLowerCase() === a.toLowerCase() },
};

export function conditionMatches(
  operator: string,
  actual: string | string[] | undefined,
  values: string[],
): boolean {
  let op = operator;
  let set: "ForAnyValue" | "ForAllValues" | undefined;
  const prefix = /^(ForAnyValue|ForAllValues):/.exec(op);
  if (prefix) {
    set = prefix[1] as "ForAnyValue" | "ForAllValues";
    op = op.slice(prefix[0].length);
  }
  const ifExists = op.endsWith("IfExists");
  if (ifExists) op = op.slice(0, -"IfExists".length);
  if (op === "Null") {
    const absent = actual === undefined || (Array.isArray(actual) && actual.length === 0);
    return values.some((v) => (v.toLowerCase() === "true") === absent);
  }
  const rule = COMPARE[op];
  if (!rule) throw new Error(`IAM condition operator ${operator} is not supported by the local evaluator`);
  const actuals = actual === undefined ? [] : [actual].flat();
  if (actuals.length === 0) {
    // A missing key: IfExists and ForAllValues match, negated operators match, the rest do not.
    return ifExists || set === "ForAllValues" || Boolean(rule.negated);
  }
  const one = (a: string) => values.some((p) => rule.compare(p, a));
  const positive = set === "ForAllValues" ? actuals.every(one) : actuals.some(one);
  if (!rule.negated) return positive;
  // Negated: no value may match (for ForAnyValue: some value matches none).
  return set === "ForAnyValue" ? actuals.some((a) => !one(a)) : !actuals.some(one);
}
