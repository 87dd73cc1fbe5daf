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

export const requestSpec = z.object({
  project_id: z.string(),
  user_id: z.string().optional(),
  flavor: flavorSpec,
  image: imageSpec,
  availability_zone: z.string().optional(),
  scheduler_hints: z.record(z.string(), z.unknown()),
  num_instances: z.number().int().min(1),
  ignore_hosts: z.array(z.string()).optional(),
  force_hosts: z.array(z.string()).optional(),
  force_nodes: z.array(z.string()).optional(),
  requested_destination: z.object({ host: z.string().optional(), node: z.string().optional() }).optional(),
});

export const selection = z.object({
  host: z.string(),
  nodename: z.string(),
  availability_zone: z.string(),
  resources: z.record(z.string(), z.number()),
});

/** Nova's filter_properties['retry']: the attempt this message asks for and the hosts tried. */
export const retry = z.object({
  num_attempts: z.number().int().min(1),
  hosts: z.array(z.string()),
  /** why the previous attempt failed, for MaxRetriesExceeded's "Last exception" */
  last_fault: z.string().optional(),
});

/** A short, operator-readable account of why a message failed validation. */
export function describeZodError(err: z.ZodError): string {
  return err.issues
    .slice(0, 5)
    .map((i) => `${i.path.length ? i.path.join(".") : "(root)"}: ${i.message}`)
    .join("; ");
}
