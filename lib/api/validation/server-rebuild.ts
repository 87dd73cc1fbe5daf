// The rebuild action's body (Nova's schemas/servers.py rebuild, per microversion): imageRef
// required; name, adminPass, metadata, preserve_ephemeral, OS-DCF:diskConfig, accessIPv4/6 and
// personality (until 2.56) from 2.1; description from 2.19; key_name (null unsets it) from 2.54;
// user_data (null resets it) from 2.57; trusted_image_certificates from 2.63; hostname from 2.90
// (an FQDN from 2.94).
import { z } from "zod";
import { badRequest } from "../errors.js";
import type { ApiVersion } from "../microversion.js";
import { novaBoolean, novaName, UUID_RE, validate } from "./common.js";
import { accessIPv4, accessIPv6, description, fqdn, hostname, metadataSchema, userData } from "./servers.js";

/** parameter_types.image_id: a uuid (a rebuild takes no image name). */
const imageId = z.string().refine((s) => UUID_RE.test(s), { message: "is not a 'uuid'" });

/** parameter_types.personality: files to inject (accepted, and not injected: there is no disk). */
const personality = z.array(z.strictObject({ path: z.string().optional(), contents: z.string().optional() }));

/** parameter_types.trusted_certs */
const trustedCerts = z
  .array(z.string().min(1))
  .min(1)
  .max(50)
  .refine((a) => new Set(a).size === a.length, { message: "has non-unique elements" })
  .nullable();

export interface RebuildBody {
  imageRef: string;
  name?: string;
  adminPass?: string;
  metadata?: Record<string, string>;
  preserve_ephemeral?: boolean;
  accessIPv4?: string;
  accessIPv6?: string;
  description?: string | null;
  key_name?: string | null;
  user_data?: string | null;
  trusted_image_certificates?: string[] | null;
  hostname?: string;
}

function schemaFor(v: ApiVersion) {
  return z.strictObject({
    rebuild: z.strictObject({
      imageRef: imageId,
      name: novaName.optional(),
      adminPass: z.string().optional(),
      metadata: metadataSchema.optional(),
      preserve_ephemeral: novaBoolean.optional(),
      "OS-DCF:diskConfig": z.enum(["AUTO", "MANUAL"]).optional(),
      accessIPv4: accessIPv4.optional(),
      accessIPv6: accessIPv6.optional(),
      ...(v.atLeast("2.57") ? {} : { personality: personality.optional() }),
      ...(v.atLeast("2.19") ? { description } : {}),
      ...(v.atLeast("2.54") ? { key_name: z.string().min(1).max(255).nullable().optional() } : {}),
      ...(v.atLeast("2.57") ? { user_data: userData.nullable().optional() } : {}),
      ...(v.atLeast("2.63") ? { trusted_image_certificates: trustedCerts.optional() } : {}),
      ...(v.atLeast("2.90") ? { hostname: v.atLeast("2.94") ? fqdn : hostname } : {}),
    }),
  });
}

const schemas = new Map<string, ReturnType<typeof schemaFor>>();

/** The body of {"rebuild": {...}} at `v`, or Nova's 400. */
export function parseRebuildBody(arg: unknown, v: ApiVersion): RebuildBody {
  let schema = schemas.get(v.toString());
  if (!schema) {
    schema = schemaFor(v);
    schemas.set(v.toString(), schema);
  }
  const body = validate(schema, { rebuild: arg }).rebuild as RebuildBody;
  // Nova verifies image signatures against these certificates; nothing here can (null unsets them)
  if (body.trusted_image_certificates?.length) {
    throw badRequest(
      `Image signature certificate validation failed for certificate: ${body.trusted_image_certificates[0]}. Image signature verification is not supported by this deployment.`,
    );
  }
  return body;
}
