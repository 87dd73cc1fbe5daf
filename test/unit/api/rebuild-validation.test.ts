// The rebuild action's body at each microversion (Nova's schemas/servers.py rebuild_v2xx), in
// Nova's words when it is refused.
import { describe, expect, it } from "vitest";
import { ApiError } from "../../../lib/api/errors.js";
import { ApiVersion } from "../../../lib/api/microversion.js";
import { parseRebuildBody } from "../../../lib/api/validation/server-rebuild.js";

const IMAGE = "a1b2c3d4-0000-4000-8000-000000000002";
const at = (v: string) => ApiVersion.parse(v);

function refusal(body: unknown, v = "2.1"): string {
  try {
    parseRebuildBody(body, at(v));
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    return (e as ApiError).message;
  }
  throw new Error(`accepted at ${v}: ${JSON.stringify(body)}`);
}

describe("rebuild body", () => {
  it("imageRef is required and a uuid; the field is named as Nova names it", () => {
    expect(refusal({})).toBe(
      "Invalid input for field/attribute rebuild. Value: {}. 'imageRef' is a required property",
    );
    expect(refusal({ imageRef: "cirros" })).toBe(
      "Invalid input for field/attribute imageRef. Value: cirros. 'cirros' is not a 'uuid'",
    );
    expect(refusal(null)).toMatch(
      /^Invalid input for field\/attribute rebuild\. .* is not of type 'object'$/,
    );
  });

  it.each([
    // field, value, first version it is accepted at (undefined: never), last version (undefined: latest)
    ["name", "vm", "2.1", undefined],
    ["adminPass", "pw", "2.1", undefined],
    ["metadata", { a: "1" }, "2.1", undefined],
    ["preserve_ephemeral", true, "2.1", undefined],
    ["OS-DCF:diskConfig", "AUTO", "2.1", undefined],
    ["accessIPv4", "10.0.0.1", "2.1", undefined],
    ["personality", [{ path: "/etc/motd", contents: "aGk=" }], "2.1", "2.56"],
    ["description", "a server", "2.19", undefined],
    ["key_name", null, "2.54", undefined],
    ["user_data", "aGk=", "2.57", undefined],
    ["trusted_image_certificates", null, "2.63", undefined],
    ["hostname", "web-1", "2.90", undefined],
  ])("%s is accepted from its version", (field, value, from, until) => {
    const body = { imageRef: IMAGE, [field]: value };
    const [major, minor] = from!.split(".").map(Number) as [number, number];
    if (minor > 1)
      expect(refusal(body, `${major}.${minor - 1}`)).toMatch(/Additional properties are not allowed/);
    expect(() => parseRebuildBody(body, at(from!))).not.toThrow();
    if (until) {
      const [m, n] = until.split(".").map(Number) as [number, number];
      expect(refusal(body, `${m}.${n + 1}`)).toMatch(/Additional properties are not allowed/);
    }
  });

  it("a hostname is a label until 2.93 and an FQDN from 2.94", () => {
    expect(refusal({ imageRef: IMAGE, hostname: "a.example.org" }, "2.93")).toMatch(/hostname/);
    expect(parseRebuildBody({ imageRef: IMAGE, hostname: "a.example.org" }, at("2.94")).hostname).toBe(
      "a.example.org",
    );
  });

  it("trusted_image_certificates: Nova's 400 for any certificate (no signature verification here)", () => {
    expect(refusal({ imageRef: IMAGE, trusted_image_certificates: ["c1"] }, "2.63")).toBe(
      "Image signature certificate validation failed for certificate: c1. Image signature verification is not supported by this deployment.",
    );
    expect(refusal({ imageRef: IMAGE, trusted_image_certificates: [] }, "2.63")).toMatch(/non-empty/);
  });

  it("key_name null unsets it; user_data null resets it", () => {
    expect(parseRebuildBody({ imageRef: IMAGE, key_name: null }, at("2.54")).key_name).toBeNull();
    expect(parseRebuildBody({ imageRef: IMAGE, user_data: null }, at("2.57")).user_data).toBeNull();
  });
});
