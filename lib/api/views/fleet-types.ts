// os-fleet's row, shared with the console (console/src/types.ts): types only, no imports.

export interface FleetHost {
  host: string;
  /** os-services' id at 2.53 (PUT /os-services/{service_id}) */
  service_id: string;
  zone: string;
  /** the aggregates' numbers (ids in os-aggregates) */
  aggregates: number[];
  state: "up" | "down";
  status: "enabled" | "disabled";
  forced_down: boolean;
  disabled_reason: string | null;
  instances: number;
  /** builds in flight (num_io_ops) */
  building: number;
  failed_builds: number;
  /** per resource class, [used, capacity] with capacity = (total − reserved) × ratio */
  resources: Record<string, [number, number]>;
  changed_at: string;
  /** only in a changes-since answer: the service was deleted, drop the host */
  deleted?: true;
}
