// Nova's extra_specs_ops.match, operator by operator, and the Python semantics behind it.
import { describe, expect, it } from "vitest";
import { matchExtraSpec } from "../../../lib/scheduler/extra-specs-ops.js";
import { inNetwork, parseIp, parseNetwork } from "../../../lib/scheduler/ip.js";
import { pyCompare, pyEquals, pyFloat, pyInt, pyStr, truthy } from "../../../lib/scheduler/python.js";

describe("matchExtraSpec", () => {
  it.each([
    ["no operator: the whole text", "1", "1", true],
    ["no operator, different", "1", "2", false],
    ["=: a number ≥", "3", "= 2", true],
    ["=: below", "1", "= 2", false],
    ["==: equal numbers", "2.0", "== 2", true],
    ["!=", "2", "!= 3", true],
    [">=", "10", ">= 9", true],
    ["<=", "10", "<= 9", false],
    ["numbers that are not: no match (Nova raises)", "abc", ">= 1", false],
    ["s==", "QEMU", "s== QEMU", true],
    ["s!=", "QEMU", "s!= KVM", true],
    ["s< is text order", "10", "s< 9", true],
    ["s<=", "abc", "s<= abd", true],
    ["s>", "b", "s> a", true],
    ["s>=", "a", "s>= b", false],
    ["<in> a substring", "sse sse2 avx", "<in> avx", true],
    ["<in> absent", "sse", "<in> avx", false],
    ["<all-in> every word", "sse sse2 avx", "<all-in> sse avx", true],
    ["<all-in> one missing", "sse sse2", "<all-in> sse avx", false],
    ["<or> one of", "b", "<or> a <or> b", true],
    ["<or> none of", "c", "<or> a <or> b", false],
    ["<or> alone", "c", "<or>", false],
    ["an operator without operand", "3", ">=", false],
    ["no value (None) with an operator", undefined, ">= 1", false],
  ])("%s", (_name, value, req, expected) => {
    expect(matchExtraSpec(value, req)).toBe(expected);
  });
});

describe("Python's semantics", () => {
  it.each([
    ["1.5", 1.5],
    [" 2 ", 2],
    ["1e3", 1000],
    ["1_000", 1000],
    ["inf", Number.POSITIVE_INFINITY],
    ["", undefined],
    ["0x10", undefined],
    ["abc", undefined],
  ])("float(%j)", (text, n) => expect(pyFloat(text)).toBe(n));

  it.each([
    ["5", 5],
    ["+5", 5],
    ["5.0", undefined],
    ["", undefined],
  ])("int(%j)", (text, n) => expect(pyInt(text)).toBe(n));

  it("str(), truthiness, == and ordering", () => {
    expect([pyStr(16, true), pyStr(16), pyStr(true), pyStr(null), pyStr(["a", 1])]).toEqual([
      "16.0",
      "16",
      "True",
      "None",
      "['a', 1]",
    ]);
    expect([truthy([]), truthy({}), truthy(""), truthy(0), truthy("0"), truthy([0])]).toEqual([
      false,
      false,
      false,
      false,
      true,
      true,
    ]);
    expect([pyEquals(true, 1), pyEquals("1", 1), pyEquals([1, 2], [1, 2])]).toEqual([true, false, true]);
    expect([pyCompare(1, 2), pyCompare("b", "a"), pyCompare("a", 1)]).toEqual([-1, 1, undefined]);
  });
});

describe("IP networks (SimpleCIDRAffinityFilter)", () => {
  it.each([
    ["10.1.2.3", "10.1.2.0/24", true],
    ["10.1.3.3", "10.1.2.0/24", false],
    ["10.1.2.3", "10.1.2.3", true],
    ["10.1.2.3", "10.0.0.0/8", true],
    ["fd00::1", "fd00::/16", true],
    ["::ffff:10.0.0.1", "::ffff:10.0.0.0/120", true],
    ["10.0.0.1", "fd00::/16", false],
  ])("%s in %s", (ip, net, expected) => {
    expect(inNetwork(parseIp(ip)!, parseNetwork(net)!)).toBe(expected);
  });

  it.each(["10.0.0", "10.0.0.256", "1::2::3", "10.0.0.1/33", "x"])("rejects %s", (text) => {
    expect(parseNetwork(text)).toBeUndefined();
  });
});
