import { describe, expect, it } from "vitest";
import { tailLog } from "../../lib/messages/console-log.js";

describe("tailLog (Nova's _tail_log)", () => {
  it("keeps the last `length` pieces, the empty one after a final newline counting", () => {
    expect(tailLog("a\nb\nc\n", 3)).toBe("b\nc\n");
    expect(tailLog("a\nb\nc\n", 1)).toBe("");
    expect(tailLog("a\nb\nc", 2)).toBe("b\nc");
    expect(tailLog("a\nb\nc\n", 10)).toBe("a\nb\nc\n");
  });
  it("all of it without a length, nothing for 0; tailing twice changes nothing", () => {
    expect(tailLog("a\nb\n", undefined)).toBe("a\nb\n");
    expect(tailLog("a\nb\n", 0)).toBe("");
    expect(tailLog(tailLog("a\nb\nc\nd\n", 3), 3)).toBe(tailLog("a\nb\nc\nd\n", 3));
  });
});
