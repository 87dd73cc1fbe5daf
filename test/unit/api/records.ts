// An instance record for view and filter tests.
import type { InstanceRecord } from "../../../lib/instances/types.js";

export function record(over: Partial<InstanceRecord> = {}): InstanceRecord {
  const id = over.id ?? "6a1f0b8e-1111-4000-8000-000000000001";
  const rid = over.request_id ?? "req-00000000-0000-4000-8000-000000000001";
  return {
    id,
    name: "vm",
    project_id: "demo",
    user_id: "demo",
    reservation_id: "r-abcdefgh",
    request_id: rid,
    flavor: {
      id: "1",
      name: "m1.tiny",
      vcpus: 1,
      memory_mb: 512,
      root_gb: 1,
      ephemeral_gb: 0,
      swap: 0,
      extra_specs: {},
    },
    image: { id: "a1b2c3d4-0000-4000-8000-000000000001", name: "cirros", properties: {} },
    requested_availability_zone: null,
    availability_zone: null,
    metadata: {},
    vm_state: "building",
    task_state: "scheduling",
    host: null,
    node: null,
    attempt: 0,
    spawn_attempt: 0,
    retry_hosts: [],
    fault: null,
    created_at: "2026-03-01T12:00:00.123Z",
    updated_at: "2026-03-01T12:00:01.456Z",
    launched_at: null,
    deleted: false,
    deleted_at: null,
    actions: {
      [rid]: {
        action: "create",
        request_id: rid,
        user_id: "demo",
        project_id: "demo",
        start_time: "2026-03-01T12:00:00.123Z",
        message: null,
        events: {},
      },
    },
    ...over,
  };
}
