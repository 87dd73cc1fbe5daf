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
}

export interface Image {
  id: string;
  name: string;
  status: "active";
  min_disk: number;
  min_ram: number;
  properties: Record<string, string>;
  created_at: string;
}
