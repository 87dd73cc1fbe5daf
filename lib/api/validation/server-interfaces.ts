// os-interface's create body (Nova's schemas/attach_interfaces.py): create before 2.49, create_v249
// (the tag) from it. The pairs Nova's controller refuses are checked by the route after the
// server is found, as Nova checks them.
import { z } from "zod";
import type { AttachRequest } from "../../instances/interfaces.js";
import type { ApiVersion } from "../microversion.js";
import { validate } from "./common.js";
import { tagSchema, uuidLike } from "./servers.js";

/** parameter_types.ip_address: an IPv4 or IPv6 address. */
const ipAddress = z.union([z.ipv4(), z.ipv6()]);

const attachment = z.strictObject({
  net_id: uuidLike.optional(),
  port_id: uuidLike.optional(),
  fixed_ips: z
    .array(z.strictObject({ ip_address: ipAddress }))
    .min(1)
    .max(1)
    .optional(),
});

const before249 = z.strictObject({ interfaceAttachment: attachment.optional() });
const from249 = z.strictObject({
  interfaceAttachment: attachment.extend({ tag: tagSchema.optional() }).optional(),
});

/** The attach asked for: Nova reads the first fixed IP's address only. */
export function parseAttachBody(raw: unknown, v: ApiVersion): AttachRequest {
  const body = validate(v.atLeast("2.49") ? from249 : before249, raw);
  const a: z.output<typeof from249>["interfaceAttachment"] & object = body.interfaceAttachment ?? {};
  return {
    ...(a.net_id ? { net_id: a.net_id } : {}),
    ...(a.port_id ? { port_id: a.port_id } : {}),
    ...(a.fixed_ips?.[0] ? { fixed_ip: a.fixed_ips[0].ip_address } : {}),
    ...(a.tag !== undefined ? { tag: a.tag } : {}),
  };
}
