export interface Flavor {
  id: string;
  name: string;
  vcpus: number;
  /** MB */
  memory_mb: number;
  /** GB */
  root_gb: number;
  ephemeral_gb: number;
  /** MB, as Nova's flavor.swap */
  swap: number;
  rxtx_factor: number;
  is_public: boolean;
  disabled: boolean;
  extra_specs: Record<string, string>;
  description: string | null;
  /** the projects a private flavor is shared with (Nova's flavor access), sorted */
  projects?: string[];
}

/** Glance's visibilities: every project's, its owner's, its owner's and its members', anyone's who asks. */
export type ImageVisibility = "public" | "private" | "shared" | "community";

/** Glance's image statuses this catalog uses (a deleted image is gone). */
export type ImageStatus = "queued" | "saving" | "active" | "killed";

export interface Image {
  id: string;
  name: string;
  status: ImageStatus;
  min_disk: number;
  min_ram: number;
  properties: Record<string, string>;
  created_at: string;
  updated_at?: string;
  /** the project that owns it (a snapshot's); absent: the catalog's own, public images */
  owner?: string;
  /** Glance's visibility; absent: public (the catalog's seeded images) */
  visibility?: ImageVisibility;
  /** the projects a shared image is shared with (Glance's members; Nova's instance_owner) */
  members?: string[];
  /** its data, once uploaded (a snapshot's, in the images bucket); absent: a record only */
  size?: number;
  /** bytes the guest sees, where the data's format records it (Glance's virtual_size) */
  virtual_size?: number;
  checksum?: string;
  os_hash_algo?: string;
  os_hash_value?: string;
  /** a backup's rotation, kept for compute-events to rotate with once the backup is uploaded */
  rotation?: number;
}

/** Nova's host aggregate: membership lives here (as Nova's aggregate_hosts), not on the host. */
export interface Aggregate {
  /** the uuid: what hosts and the scheduler know it by (Nova's `uuid`) */
  id: string;
  /** Nova's integer id, the API's `id`, given at create (an item written before has none) */
  number?: number;
  name: string;
  /** metadata `availability_zone`, surfaced as Nova does */
  availability_zone: string | null;
  hosts: string[];
  metadata: Record<string, string>;
  created_at: string;
  updated_at: string;
}

export type ServerGroupPolicy = "affinity" | "anti-affinity" | "soft-affinity" | "soft-anti-affinity";

/** Nova's server group (os-server-groups, microversion 2.64 shape: one policy plus rules). */
export interface ServerGroup {
  id: string;
  name: string;
  policy: ServerGroupPolicy;
  rules: { max_server_per_host?: number };
  /** instance uuids, added when a server is created into the group */
  members: string[];
  project_id: string;
  user_id: string;
  created_at: string;
}
