// The tables and queues, described once: the CDK stack, the local runtime and the domain all build from
// these, so local tables cannot drift from the deployed ones.

/**
 * What an index copies from the table: everything, the keys only, or the keys and these
 * attributes (INCLUDE). An index write costs by the size of what it projects.
 */
export type Projection = "ALL" | "KEYS_ONLY" | string[];

export interface GsiSpec {
  indexName: string;
  partitionKey: string;
  sortKey?: string;
  projection: Projection;
}

export interface TableSpec {
  /** logical id in the stack, and the local table name */
  id:
    | "Hosts"
    | "HostChanges"
    | "Allocations"
    | "Instances"
    | "Catalog"
    | "Services"
    | "Scheduling"
    | "Identity"
    | "Migrations"
    | "Networking";
  localName: string;
  partitionKey: string;
  sortKey?: string;
  /** environment variable that carries the table name to the handlers */
  env: string;
  gsis: GsiSpec[];
  /** the attribute DynamoDB's TTL expires items by (epoch seconds), if the table has one */
  ttlAttribute?: string;
}

/**
 * What the watchdog reads of a build in flight, besides its id and build_deadline: read from the
 * items (the index carries keys only), so a build's own writes cost the index nothing.
 */
export const WATCHED_ATTRIBUTES = [
  "request_id",
  "reservation_id",
  "project_id",
  "user_id",
  "vm_state",
  "task_state",
  "deleted",
  "host",
  "attempt",
  "spawn_attempt",
  "alternates",
  "retry_hosts",
];

export const TABLES: TableSpec[] = [
  {
    id: "Hosts",
    localName: "novaless-hosts",
    partitionKey: "host",
    env: "NOVALESS_HOSTS_TABLE",
    // No index: an index entry keyed by the write's time moves (a delete and a put) on every
    // write, 2× again inside a claim's transaction. The change feed is HostChanges, below.
    gsis: [],
  },
  {
    // The scheduler's change feed (lib/placement/change-log.ts): one small item per write to a
    // host item, pk `feed` (a shard), sk `at` (`<changed_at>#<host>`), expired by TTL. A claim
    // appends one outside its transaction: 1 write unit where an index entry's move cost 4.
    id: "HostChanges",
    localName: "novaless-host-changes",
    partitionKey: "feed",
    sortKey: "at",
    env: "NOVALESS_HOST_CHANGES_TABLE",
    ttlAttribute: "expires_at",
    gsis: [],
  },
  {
    // One item per claim: (instance, host); its resources are also counted on the provider item.
    id: "Allocations",
    localName: "novaless-allocations",
    partitionKey: "consumer",
    sortKey: "host",
    env: "NOVALESS_ALLOCATIONS_TABLE",
    gsis: [],
  },
  {
    id: "Instances",
    localName: "novaless-instances",
    partitionKey: "id",
    env: "NOVALESS_INSTANCES_TABLE",
    ttlAttribute: "expires_at",
    gsis: [
      // The listing reads the live ones' keys here, then the items themselves (BatchGetItem).
      { indexName: "by-project", partitionKey: "project_id", sortKey: "created_at", projection: ["deleted"] },
      // Nova's InstanceList.get_by_host: what a (re)starting host should be running.
      { indexName: "by-host", partitionKey: "host", sortKey: "created_at", projection: ["deleted"] },
      // The servers listings of every project, and the status filter (Nova's status is a vm_state,
      // then a task_state checked on the item): one partition per vm_state, merged newest first.
      // Keys only: an entry is written when the instance is created and when its vm_state
      // changes (a delete and a put), not on its other writes. Console outputs have no vm_state and
      // stay out. Its `building` partition is also the watchdog's list of builds in flight
      // (lib/instances/watch.ts): a sparse index of its own for them would cost every build a put
      // and a delete more.
      { indexName: "by-vm-state", partitionKey: "vm_state", sortKey: "created_at", projection: "KEYS_ONLY" },
      // changes-since/changes-before (Nova's polling filter; deleted ones included): by updated_at,
      // so every write of an instance moves its entry (a delete and a put, under 1 KB each).
      // change_shard spreads those writes over CHANGE_SHARDS partitions; it is set when the
      // instance leaves BUILD, so a build's own writes cost this index one put (the builds in
      // flight are read from by-vm-state: lib/instances/queries.ts). What the filters read is
      // projected; it changes only with updated_at, so it costs no extra write.
      {
        indexName: "changes",
        partitionKey: "change_shard",
        sortKey: "updated_at",
        projection: ["created_at", "project_id", "host", "vm_state", "deleted"],
      },
    ],
  },
  // The compute service's heartbeat, apart from the provider item so a heartbeat is a tiny write.
  {
    id: "Services",
    localName: "novaless-services",
    partitionKey: "host",
    env: "NOVALESS_SERVICES_TABLE",
    gsis: [],
  },
  // The explanation of each instance's last scheduling decision (os-scheduling), apart from the
  // instance item so that every transition of the instance does not pay for it.
  {
    id: "Scheduling",
    localName: "novaless-scheduling",
    partitionKey: "id",
    env: "NOVALESS_SCHEDULING_TABLE",
    gsis: [],
  },
  // Nova's migration records (os-migrations): one item per move, listed by instance through the
  // index; the instance's record carries the move in progress.
  {
    id: "Migrations",
    localName: "novaless-migrations",
    partitionKey: "uuid",
    env: "NOVALESS_MIGRATIONS_TABLE",
    gsis: [
      { indexName: "by-instance", partitionKey: "instance_uuid", sortKey: "created_at", projection: "ALL" },
      // os-migrations' pages (2.59: newest first, limit, marker) and the list before 2.59, without
      // a Scan. One partition (`listed` is a constant, set at create): moves are far rarer than
      // its 1,000 writes a second. ALL: a page is read from the index alone; a migration item is
      // under 1 KB, so a status change costs the index one write unit.
      { indexName: "by-created", partitionKey: "listed", sortKey: "created_at", projection: "ALL" },
      // The moves not over yet (the watchdog's, every minute): sparse, `open` is set while the
      // status is open and removed when the move ends. Keys only: a put when the move starts and a
      // delete when it ends, nothing for the steps between; the few open ones are then read whole.
      { indexName: "open", partitionKey: "open", sortKey: "created_at", projection: "KEYS_ONLY" },
      // A host's moves away (a registering host's evacuations to clean up). Its keys and the
      // type never change: one put per move.
      {
        indexName: "by-source",
        partitionKey: "source_compute",
        sortKey: "created_at",
        projection: ["migration_type"],
      },
    ],
  },
  {
    id: "Catalog",
    localName: "novaless-catalog",
    partitionKey: "pk",
    env: "NOVALESS_CATALOG_TABLE",
    gsis: [],
  },
  // Keystone's users (scrypt hashes), projects, domains, roles, role assignments, application
  // credentials and revoked tokens (lib/identity/store.ts): written by the seed and /identity.
  {
    id: "Identity",
    localName: "novaless-identity",
    partitionKey: "pk",
    env: "NOVALESS_IDENTITY_TABLE",
    // an admin's whole-kind listings (projects, users, role assignments) Query one kind
    gsis: [{ indexName: "by-kind", partitionKey: "kind", sortKey: "pk", projection: "ALL" }],
    // a revoked token's mark lasts until the token would have expired
    ttlAttribute: "expires_at",
  },
  // Neutron's networks, subnets and ports, and one item per allocated address (lib/network/store/).
  {
    id: "Networking",
    localName: "novaless-networking",
    partitionKey: "pk",
    env: "NOVALESS_NETWORKING_TABLE",
    gsis: [
      // whole-kind listings (networks, subnets, security groups, a group's members); ports, address
      // and lookup items carry no kind (ports are listed network by network, from by-network: a
      // port's writes cost no entry here)
      { indexName: "by-kind", partitionKey: "kind", sortKey: "pk", projection: "ALL" },
      // Sparse, keys only: the addresses a port holds (only address items carry `holder`), so a
      // port's delete frees what a crash left unrecorded on the port item.
      { indexName: "by-holder", partitionKey: "holder", sortKey: "pk", projection: "KEYS_ONLY" },
      // a network's subnets and ports (a delete's in-use checks, `port list --network`), whole
      { indexName: "by-network", partitionKey: "network_id", sortKey: "pk", projection: "ALL" },
      // Sparse: a device's ports (`?device_id=`, what the SDK's and Ansible's server paths ask for
      // each server), whole. `device` is the port's device_id while it has one (an index key
      // cannot be an empty string, and a free port's device_id is "").
      { indexName: "by-device", partitionKey: "device", sortKey: "pk", projection: "ALL" },
    ],
  },
];

export const IDENTITY_BY_KIND_INDEX = "by-kind";
export const NETWORKING_BY_KIND_INDEX = "by-kind";
export const NETWORKING_BY_HOLDER_INDEX = "by-holder";
export const NETWORKING_BY_NETWORK_INDEX = "by-network";
export const NETWORKING_BY_DEVICE_INDEX = "by-device";

export const INSTANCES_BY_PROJECT_INDEX = "by-project";
export const INSTANCES_BY_HOST_INDEX = "by-host";
export const INSTANCES_BY_VM_STATE_INDEX = "by-vm-state";
export const INSTANCES_CHANGES_INDEX = "changes";
export const MIGRATIONS_BY_INSTANCE_INDEX = "by-instance";
export const MIGRATIONS_BY_CREATED_INDEX = "by-created";
export const MIGRATIONS_OPEN_INDEX = "open";
export const MIGRATIONS_BY_SOURCE_INDEX = "by-source";

export interface QueueSpec {
  localName: string;
  /** seconds; longer than the consumer's longest handling of one message */
  visibilityTimeout: number;
  /** receives before SQS moves a message to the DLQ */
  maxReceiveCount: number;
}

/** build-intake's timeout (seconds): a batch is at most 10 starts, each a StartExecution. */
export const BUILD_INTAKE_TIMEOUT_SECONDS = 30;

/**
 * build-intake's event source reads it. Its visibility timeout is six times the function's, as
 * AWS advises for an SQS event source (a batch throttled or retried by Lambda stays hidden
 * meanwhile). A request whose start fails is hidden for a shorter, growing delay instead
 * (lib/conductor/intake.ts): with 10 receives, Step Functions has about five minutes to answer
 * again before the request goes to the DLQ.
 */
export const BUILD_REQUESTS_QUEUE: QueueSpec = {
  localName: "novaless-build-requests",
  visibilityTimeout: 6 * BUILD_INTAKE_TIMEOUT_SECONDS,
  maxReceiveCount: 10,
};

/**
 * Every compute host's own queue is made from this (named `${prefix}<host>`, DLQ `…-dlq`). The
 * visibility timeout is short so that what a crashed host had received comes back soon; the
 * agent keeps a running build's message hidden by extending it.
 */
export const COMPUTE_QUEUE: QueueSpec = {
  localName: "novaless-compute-",
  visibilityTimeout: 30,
  maxReceiveCount: 5,
};

/**
 * Every host's reports (registration, heartbeats, build and power results) to the conductor's
 * compute-events function, POSTed to its function URL (AWS_IAM): no queue and no event source,
 * whose pollers would cost a fleet the same whether it reports or not. Handling one is a few
 * conditional writes; one that cannot be applied goes to the dead-letter queue with its reason.
 */
export const COMPUTE_EVENTS = {
  // not under the local compute queue prefix (novaless-compute-): it is no host's queue
  dlqLocalName: "novaless-compute_events-dlq",
  /** the function's timeout (seconds): a report's handling is milliseconds */
  timeoutSeconds: 30,
} as const;

/** The API function's timeout: API Gateway's integration limit (29 s), so no request outlives it. */
export const API_FUNCTION_TIMEOUT_SECONDS = 29;

/** The tag on a host's queues that the compute role's policy matches with the host's principal tag. */
export const HOST_TAG = "novaless-host";

export const DLQ_SUFFIX = "-dlq";
/** 14 days, SQS's maximum: a dead letter waits for an operator. */
export const DLQ_RETENTION_SECONDS = 1209600;
