import { z } from "zod";

export const uuid = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, {
  message: "must be a UUID",
});

export const flavorSpec = z.object({
  id: z.string(),
  name: z.string(),
  vcpus: z.number().int().min(1),
  memory_mb: z.number().int().min(1),
  root_gb: z.number().int().min(0),
  ephemeral_gb: z.number().int().min(0),
  swap: z.number().int().min(0),
  extra_specs: z.record(z.string(), z.string()),
});

export const imageSpec = z.object({
  id: z.string(),
  name: z.string(),
  properties: z.record(z.string(), z.string()),
});

export type FlavorSpec = z.infer<typeof flavorSpec>;
export type ImageSpec = z.infer<typeof imageSpec>;

export const requestSpec = z.object({
  project_id: z.string(),
  user_id: z.string().optional(),
  flavor: flavorSpec,
  image: imageSpec,
  availability_zone: z.string().optional(),
  /** the zones the server's networks are available in (lib/instances/networking.ts networkZones) */
  network_availability_zones: z.array(z.string()).optional(),
  scheduler_hints: z.record(z.string(), z.unknown()),
  num_instances: z.number().int().min(1),
  ignore_hosts: z.array(z.string()).optional(),
  force_hosts: z.array(z.string()).optional(),
  force_nodes: z.array(z.string()).optional(),
  requested_destination: z.object({ host: z.string().optional(), node: z.string().optional() }).optional(),
});

/** A v1 message's alternate: a destination with the amounts to claim on it. */
export const selection = z.object({
  host: z.string(),
  nodename: z.string(),
  availability_zone: z.string(),
  resources: z.record(z.string(), z.number()),
});

/**
 * Where an instance may go (Nova's Selection without its allocation request): the amounts to
 * claim are the instance's flavor's, read from its record, so no message repeats them.
 */
export const destination = z.object({
  host: z.string().min(1),
  nodename: z.string().min(1),
  availability_zone: z.string(),
});

export type Destination = z.infer<typeof destination>;

/** Where a selection (or a v1 alternate) is, without the amounts claimed there. */
export function destinationOf(s: Destination): Destination {
  return { host: s.host, nodename: s.nodename, availability_zone: s.availability_zone };
}

/** Nova's filter_properties['retry']: the attempt this message asks for and the hosts tried. */
export const retry = z.object({
  num_attempts: z.number().int().min(1),
  hosts: z.array(z.string()),
  /**
   * why the previous attempt failed, for MaxRetriesExceeded's "Last exception"; the owner reads
   * it, so senders write it without host names (and the hosts tried are taken out of it again)
   */
  last_fault: z.string().optional(),
});

/** A short, operator-readable account of why a message failed validation. */
export function describeZodError(err: z.ZodError): string {
  return err.issues
    .slice(0, 5)
    .map((i) => `${i.path.length ? i.path.join(".") : "(root)"}: ${i.message}`)
    .join("; ");
}
