import { describe, expect, it } from "vitest";
import { conditionMatches, evaluate, type Statement, wildcard } from "../../../local/iam/evaluate.js";

const TABLE = "arn:aws:dynamodb:us-east-1:000000000000:table/novaless-catalog";
const ROLE = "arn:aws:iam::000000000000:role/novaless-scheduler";
const req = (action: string, resource: string, context: Record<string, string | string[]> = {}) => ({
  action,
  resource,
  principalArn: ROLE,
  context: { "aws:SecureTransport": "true", ...context },
});
const allow = (Action: string[], Resource: string[], Condition?: Statement["Condition"]): Statement => ({
  Effect: "Allow",
  Action,
  Resource,
  ...(Condition ? { Condition } : {}),
});

describe("evaluate", () => {
  it("allows what a statement names, and nothing else (implicit deny)", () => {
    const policy = [allow(["dynamodb:GetItem", "dynamodb:Query"], [TABLE])];
    expect(evaluate(policy, [], req("dynamodb:GetItem", TABLE))).toEqual({ allowed: true });
    expect(evaluate(policy, [], req("dynamodb:PutItem", TABLE))).toEqual({
      allowed: false,
      reason: "implicit-deny",
    });
    expect(evaluate(policy, [], req("dynamodb:GetItem", `${TABLE}-other`)).allowed).toBe(false);
    expect(evaluate([], [], req("dynamodb:GetItem", TABLE)).allowed).toBe(false);
  });

  it("matches actions case-insensitively with * and ?, resources case-sensitively", () => {
    expect(evaluate([allow(["DynamoDB:get*"], [TABLE])], [], req("dynamodb:GetItem", TABLE)).allowed).toBe(
      true,
    );
    expect(evaluate([allow(["sqs:?endMessage"], ["*"])], [], req("sqs:SendMessage", "arn:x")).allowed).toBe(
      true,
    );
    const queues = [allow(["sqs:SendMessage"], ["arn:aws:sqs:us-east-1:000000000000:novaless-compute-*"])];
    const q = (name: string) => req("sqs:SendMessage", `arn:aws:sqs:us-east-1:000000000000:${name}`);
    expect(evaluate(queues, [], q("novaless-compute-host-1")).allowed).toBe(true);
    expect(evaluate(queues, [], q("NOVALESS-compute-host-1")).allowed).toBe(false);
    expect(evaluate(queues, [], q("novaless-build-requests")).allowed).toBe(false);
    expect(wildcard("a.b*", "axb", false)).toBe(false);
  });

  it("an index needs its own resource: the table's ARN does not cover /index/…", () => {
    const policy = [allow(["dynamodb:Query"], [TABLE])];
    expect(evaluate(policy, [], req("dynamodb:Query", `${TABLE}/index/by-project`)).allowed).toBe(false);
    expect(
      evaluate(
        [allow(["dynamodb:Query"], [`${TABLE}/index/*`])],
        [],
        req("dynamodb:Query", `${TABLE}/index/x`),
      ).allowed,
    ).toBe(true);
  });

  it("an explicit Deny wins over any Allow, identity- or resource-based", () => {
    const deny: Statement = { Effect: "Deny", Action: ["dynamodb:*"], Resource: [TABLE] };
    expect(evaluate([allow(["*"], ["*"]), deny], [], req("dynamodb:GetItem", TABLE))).toEqual({
      allowed: false,
      reason: "explicit-deny-identity",
    });
    const enforceSsl: Statement = {
      Effect: "Deny",
      Principal: { AWS: "*" },
      Action: ["sqs:*"],
      Resource: ["arn:aws:sqs:us-east-1:000000000000:q"],
      Condition: { Bool: { "aws:SecureTransport": ["false"] } },
    };
    const send = (secure: string) =>
      evaluate([allow(["sqs:*"], ["*"])], [enforceSsl], {
        ...req("sqs:SendMessage", "arn:aws:sqs:us-east-1:000000000000:q"),
        context: { "aws:SecureTransport": secure },
      });
    expect(send("true")).toEqual({ allowed: true });
    expect(send("false")).toEqual({ allowed: false, reason: "explicit-deny-resource" });
  });

  it("a resource policy's Allow grants to the principal it names only", () => {
    const grant: Statement = {
      Effect: "Allow",
      Principal: { AWS: ROLE },
      Action: ["sqs:SendMessage"],
      Resource: ["*"],
    };
    expect(evaluate([], [grant], req("sqs:SendMessage", "arn:q")).allowed).toBe(true);
    expect(
      evaluate(
        [],
        [{ ...grant, Principal: { AWS: "arn:aws:iam::000000000000:role/other" } }],
        req("sqs:SendMessage", "arn:q"),
      ).allowed,
    ).toBe(false);
  });

  it("NotAction and NotResource", () => {
    const s: Statement = { Effect: "Allow", NotAction: ["dynamodb:Delete*"], NotResource: [TABLE] };
    expect(evaluate([s], [], req("dynamodb:GetItem", `${TABLE}x`)).allowed).toBe(true);
    expect(evaluate([s], [], req("dynamodb:DeleteItem", `${TABLE}x`)).allowed).toBe(false);
    expect(evaluate([s], [], req("dynamodb:GetItem", TABLE)).allowed).toBe(false);
  });

  it("every condition must hold; policy variables come from the request", () => {
    const byTag = allow(
      ["sqs:ReceiveMessage"],
      // biome-ignore lint/suspicious/noTemplateCurlyInString: an IAM policy variable, not a template
      ["arn:aws:sqs:us-east-1:000000000000:compute-${aws:PrincipalTag/host}"],
      {
        StringEquals: { "aws:PrincipalTag/role": ["compute"] },
      },
    );
    const receive = (queue: string, tags: Record<string, string>) =>
      evaluate([byTag], [], req("sqs:ReceiveMessage", `arn:aws:sqs:us-east-1:000000000000:${queue}`, tags))
        .allowed;
    expect(
      receive("compute-host-1", { "aws:PrincipalTag/host": "host-1", "aws:PrincipalTag/role": "compute" }),
    ).toBe(true);
    expect(
      receive("compute-host-2", { "aws:PrincipalTag/host": "host-1", "aws:PrincipalTag/role": "compute" }),
    ).toBe(false);
    expect(
      receive("compute-host-1", { "aws:PrincipalTag/host": "host-1", "aws:PrincipalTag/role": "api" }),
    ).toBe(false);
    expect(receive("compute-host-1", { "aws:PrincipalTag/role": "compute" })).toBe(false);
  });
});

describe("condition operators", () => {
  it("String*, Arn*, Bool on present keys", () => {
    expect(conditionMatches("StringEquals", "a", ["a", "b"])).toBe(true);
    expect(conditionMatches("StringEquals", "A", ["a"])).toBe(false);
    expect(conditionMatches("StringEqualsIgnoreCase", "A", ["a"])).toBe(true);
    expect(conditionMatches("StringNotEquals", "a", ["a"])).toBe(false);
    expect(conditionMatches("StringNotEquals", "c", ["a"])).toBe(true);
    expect(conditionMatches("StringLike", "host-17", ["host-*"])).toBe(true);
    expect(conditionMatches("StringNotLike", "host-17", ["host-*"])).toBe(false);
    const sm = "arn:aws:states:us-east-1:000000000000:stateMachine:novaless-conductor";
    expect(conditionMatches("ArnLike", sm, ["arn:aws:states:us-east-1:000000000000:stateMachine:*"])).toBe(
      true,
    );
    expect(
      conditionMatches("ArnEquals", sm, ["arn:aws:states:us-east-1:000000000000:stateMachine:other"]),
    ).toBe(false);
    expect(conditionMatches("ArnNotLike", sm, ["arn:aws:lambda:*"])).toBe(true);
    expect(conditionMatches("Bool", "true", ["true"])).toBe(true);
    expect(conditionMatches("Bool", "true", ["false"])).toBe(false);
  });

  it("missing keys: Null, IfExists, negated operators", () => {
    expect(conditionMatches("Null", undefined, ["true"])).toBe(true);
    expect(conditionMatches("Null", "x", ["true"])).toBe(false);
    expect(conditionMatches("Null", "x", ["false"])).toBe(true);
    expect(conditionMatches("StringEquals", undefined, ["a"])).toBe(false);
    expect(conditionMatches("StringEqualsIfExists", undefined, ["a"])).toBe(true);
    expect(conditionMatches("StringEqualsIfExists", "b", ["a"])).toBe(false);
    expect(conditionMatches("StringNotEquals", undefined, ["a"])).toBe(true);
  });

  it("multi-valued keys: ForAnyValue and ForAllValues", () => {
    expect(conditionMatches("ForAnyValue:StringEquals", ["a", "z"], ["a"])).toBe(true);
    expect(conditionMatches("ForAnyValue:StringEquals", ["y", "z"], ["a"])).toBe(false);
    expect(conditionMatches("ForAllValues:StringEquals", ["a", "z"], ["a"])).toBe(false);
    expect(conditionMatches("ForAllValues:StringLike", ["a1", "a2"], ["a*"])).toBe(true);
    expect(conditionMatches("ForAllValues:StringEquals", undefined, ["a"])).toBe(true);
    expect(conditionMatches("ForAnyValue:StringNotEquals", ["a", "b"], ["a"])).toBe(true);
  });

  it("an operator the evaluator does not know is an error, not a silent match", () => {
    expect(() => conditionMatches("NumericLessThan", "1", ["2"])).toThrow(/NumericLessThan is not supported/);
  });
});
