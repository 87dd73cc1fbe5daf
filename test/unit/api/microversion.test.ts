// Version tables: the rows that hold a version, merged in order.
import { describe, expect, it } from "vitest";
import { ApiVersion, forVersion, negotiateVersion, OMIT, viewFields } from "../../../lib/api/microversion.js";

const v = (s: string) => ApiVersion.parse(s);

describe("ApiVersion", () => {
  it("compares by major then minor, not as decimals", () => {
    expect(v("2.10").atLeast("2.9")).toBe(true);
    expect(v("2.9").atLeast("2.10")).toBe(false);
    expect(v("2.47").matches("2.47", "2.47")).toBe(true);
    expect(v("2.48").matches(undefined, "2.47")).toBe(false);
    expect(v("2.1").matches()).toBe(true);
  });

  it("refuses what is not Major.Minor", () => {
    for (const s of ["2", "2.", "2.x", "02.1", "2.01", "-2.1", ""])
      expect(() => v(s)).toThrow(/invalid format/);
  });

  it("negotiates 2.1 by default and throws Nova's errors", () => {
    expect(`${negotiateVersion({})}`).toBe("2.1");
    expect(() => negotiateVersion({ "openstack-api-version": "compute 2.97" })).toThrow(/not supported/);
    expect(`${negotiateVersion({ "openstack-api-version": "volume 3.5" })}`).toBe("2.1");
  });
});

describe("version tables", () => {
  it("forVersion: the last row holding the version", () => {
    const rows = [{ value: "a" }, { min: "2.47", value: "b" }, { min: "2.60", max: "2.70", value: "c" }];
    expect(forVersion(rows, v("2.1"))).toBe("a");
    expect(forVersion(rows, v("2.47"))).toBe("b");
    expect(forVersion(rows, v("2.65"))).toBe("c");
    expect(forVersion(rows, v("2.71"))).toBe("b");
    expect(() => forVersion([{ min: "2.5", value: 1 }], v("2.1"))).toThrow(/no row/);
  });

  it("viewFields: rows merge in order; a later row overrides; OMIT removes", () => {
    const view = viewFields<{ n: number }, { admin: boolean }>([
      { fields: (r) => ({ id: r.n, flavor: "link" }) },
      { min: "2.47", fields: () => ({ flavor: "embedded" }) },
      { min: "2.88", fields: () => ({ flavor: OMIT }) },
      { min: "2.9", fields: (_, c) => (c.admin ? { locked: false } : {}) },
    ]);
    expect(view({ n: 1 }, { admin: true }, v("2.1"))).toEqual({ id: 1, flavor: "link" });
    expect(view({ n: 1 }, { admin: true }, v("2.47"))).toEqual({ id: 1, flavor: "embedded", locked: false });
    expect(view({ n: 1 }, { admin: false }, v("2.90"))).toEqual({ id: 1 });
  });
});
