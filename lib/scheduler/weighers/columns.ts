// A weigher whose raw value is one numeric host field: read from the fleet's column (contiguous
// memory, where thousands of scattered host objects would each be a cache miss).
import type { HostNumber, HostState, Weigher, WeigherContext } from "../types.js";

export function fromColumn(ctx: WeigherContext, field: HostNumber): (host: HostState, i: number) => number {
  const column = ctx.fleet.column(field);
  return (_host, i) => column[i]!;
}

/** A weigher whose raw value is its `column`, whatever the request. */
export function columnWeigher(w: Omit<Weigher, "prepare"> & { column: HostNumber }): Weigher {
  return { ...w, prepare: (_spec, ctx) => fromColumn(ctx, w.column) };
}
