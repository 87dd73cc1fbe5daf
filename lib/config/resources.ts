// The stack's tables, queues and state machine, which the stack (or the local runtime) sets.
import { type ConfigOption, row } from "./option.js";

export interface Resources {
  hostsTable: string;
  hostChangesTable: string;
  allocationsTable: string;
  instancesTable: string;
  servicesTable: string;
  schedulingTable: string;
  migrationsTable: string;
  catalogTable: string;
  identityTable: string;
  networkingTable: string;
  buildRequestsQueueUrl: string;
  buildRequestsDlqUrl: string;
  conductorStateMachineArn: string;
  /** Prefix of every compute host's queue name (see computeQueueName in lib/compute/queue-name.ts). */
  computeQueuePrefix: string;
  /** snapshots' image data, images/<image id> (lib/compute/image-store.ts) */
  imagesBucket: string;
  /** compute → conductor reports (lib/messages/reports.ts): the function URL, and the reports' dead-letter queue */
  computeEventsUrl: string;
  computeEventsDlqUrl: string;
}

/**
 * The deployed stack's default compute queue prefix: `${stackName}-compute-` lowercased, for the
 * stack infra/app.ts names "NovalessStack". An agent started with no NOVALESS_COMPUTE_QUEUE_PREFIX
 * therefore reads the queues that stack's IAM policy covers.
 */
export const DEFAULT_COMPUTE_QUEUE_PREFIX = "novalessstack-compute-";

const resource = (key: keyof Resources, name: string, env: string, value: string, help: string) =>
  row({
    key,
    group: "resources",
    name,
    nova: false,
    env,
    kind: "string",
    default: value,
    ...(value === "" ? { defaultText: "set by the stack" } : {}),
    help,
    topic: "resources",
  });

/** The stack's tables, queues and state machine: set by the stack (or the local runtime). */
export const RESOURCE_OPTIONS: readonly ConfigOption[] = [
  resource(
    "hostsTable",
    "hosts_table",
    "NOVALESS_HOSTS_TABLE",
    "novaless-hosts",
    "Resource providers (hosts).",
  ),
  resource(
    "hostChangesTable",
    "host_changes_table",
    "NOVALESS_HOST_CHANGES_TABLE",
    "novaless-host-changes",
    "The hosts' change feed: which host item was written when (the schedulers' refresh).",
  ),
  resource(
    "allocationsTable",
    "allocations_table",
    "NOVALESS_ALLOCATIONS_TABLE",
    "novaless-allocations",
    "Placement's allocations.",
  ),
  resource(
    "instancesTable",
    "instances_table",
    "NOVALESS_INSTANCES_TABLE",
    "novaless-instances",
    "Instances and build requests.",
  ),
  resource(
    "servicesTable",
    "services_table",
    "NOVALESS_SERVICES_TABLE",
    "novaless-services",
    "Compute services.",
  ),
  resource(
    "schedulingTable",
    "scheduling_table",
    "NOVALESS_SCHEDULING_TABLE",
    "novaless-scheduling",
    "The scheduler's records and decisions.",
  ),
  resource(
    "migrationsTable",
    "migrations_table",
    "NOVALESS_MIGRATIONS_TABLE",
    "novaless-migrations",
    "Migration records (resize, cold migration).",
  ),
  resource(
    "catalogTable",
    "catalog_table",
    "NOVALESS_CATALOG_TABLE",
    "novaless-catalog",
    "Flavors, images, key pairs, server groups, aggregates, quotas.",
  ),
  resource(
    "identityTable",
    "identity_table",
    "NOVALESS_IDENTITY_TABLE",
    "novaless-identity",
    "Identity's domains, projects, users, roles.",
  ),
  resource(
    "networkingTable",
    "networking_table",
    "NOVALESS_NETWORKING_TABLE",
    "novaless-networking",
    "Networking's networks, subnets, ports and allocated addresses.",
  ),
  resource(
    "buildRequestsQueueUrl",
    "build_requests_queue_url",
    "NOVALESS_BUILD_REQUESTS_QUEUE_URL",
    "",
    "The build-requests queue.",
  ),
  resource(
    "buildRequestsDlqUrl",
    "build_requests_dlq_url",
    "NOVALESS_BUILD_REQUESTS_DLQ_URL",
    "",
    "The build-requests queue's dead-letter queue.",
  ),
  resource(
    "conductorStateMachineArn",
    "conductor_arn",
    "NOVALESS_CONDUCTOR_ARN",
    "",
    "The conductor's state machine.",
  ),
  resource(
    "computeQueuePrefix",
    "compute_queue_prefix",
    "NOVALESS_COMPUTE_QUEUE_PREFIX",
    DEFAULT_COMPUTE_QUEUE_PREFIX,
    "Prefix of every compute host's queue name (lib/compute/queue-name.ts).",
  ),
  resource(
    "computeEventsUrl",
    "compute_events_url",
    "NOVALESS_COMPUTE_EVENTS_URL",
    "",
    "compute → conductor reports (lib/messages/reports.ts): compute-events' function URL (AWS_IAM).",
  ),
  resource(
    "imagesBucket",
    "images_bucket",
    "NOVALESS_IMAGES_BUCKET",
    "novaless-images",
    "The S3 bucket of snapshots' and backups' image data (images/<image id>), which any host reads to boot them.",
  ),
  resource(
    "computeEventsDlqUrl",
    "compute_events_dlq_url",
    "NOVALESS_COMPUTE_EVENTS_DLQ_URL",
    "",
    "The hosts' reports compute-events could not apply (malformed, or a host speaking for another), each with its reason. Not redrivable.",
  ),
];
