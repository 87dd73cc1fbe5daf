// os-interface's create body, as Nova's schemas/attach_interfaces.py has it before and from 2.49.
import { describe, expect, it } from "vitest";
import { ApiError } from "../../../lib/api/errors.js";
import { ApiVersion } from "../../../lib/api/microversion.js";
import { parseAttachBody } from "../../../lib/api/validation/server-interfaces.js";

const V21 = ApiVersion.parse("2.1");
const V249 = ApiVersion.parse("2.49");
const NET = "3f1e6a4c-5b1d-4e8a-9c2f-7d0a1b2c3d4e";

function refusal(raw: unknown, v = V21): string {
  try {
    parseAttachBody(raw, v);
  } catch (e) {
    if (e instanceof ApiError && e.status === 400) return e.message;
    throw e;
  }
  throw new Error("accepted");
}

describe("os-interface's create body", () => {
  it("takes nothing, a network, a port, or a network with one fixed IP (its first read)", () => {
    expect(parseAttachBody({}, V21)).toEqual({});
    expect(parseAttachBody({ interfaceAttachment: {} }, V21)).toEqual({});
    expect(parseAttachBody({ interfaceAttachment: { net_id: NET } }, V21)).toEqual({ net_id: NET });
    expect(parseAttachBody({ interfaceAttachment: { port_id: NET } }, V21)).toEqual({ port_id: NET });
    expect(
      parseAttachBody({ interfaceAttachment: { net_id: NET, fixed_ips: [{ ip_address: "10.0.0.5" }] } }, V21),
    ).toEqual({ net_id: NET, fixed_ip: "10.0.0.5" });
    expect(
      parseAttachBody({ interfaceAttachment: { net_id: NET, fixed_ips: [{ ip_address: "fd00::5" }] } }, V21),
    ).toEqual({ net_id: NET, fixed_ip: "fd00::5" });
  });

  it("takes a tag from 2.49 only", () => {
    expect(parseAttachBody({ interfaceAttachment: { net_id: NET, tag: "data" } }, V249)).toEqual({
      net_id: NET,
      tag: "data",
    });
    expect(refusal({ interfaceAttachment: { tag: "data" } })).toContain("'tag' was unexpected");
    expect(refusal({ interfaceAttachment: { tag: "a,b" } }, V249)).toContain("tag");
  });

  it("refuses what Nova's schema refuses", () => {
    expect(refusal({ interfaceAttachment: { net_id: "nope" } })).toBe(
      "Invalid input for field/attribute interfaceAttachment.net_id. Value: nope. 'nope' is not a 'uuid'",
    );
    expect(refusal({ interfaceAttachment: { fixed_ips: [] } })).toContain("should be non-empty");
    expect(
      refusal({
        interfaceAttachment: { fixed_ips: [{ ip_address: "10.0.0.1" }, { ip_address: "10.0.0.2" }] },
      }),
    ).toContain("is too long");
    expect(refusal({ interfaceAttachment: { fixed_ips: [{ ip_address: "10.0.0.300" }] } })).toContain(
      "interfaceAttachment.fixed_ips.0.ip_address",
    );
    expect(refusal({ interfaceAttachment: { fixed_ips: [{ subnet_id: NET }] } })).toContain(
      "'ip_address' is a required property",
    );
    expect(refusal({ interfaceAttachment: {}, extra: 1 })).toContain("'extra' was unexpected");
  });
});
