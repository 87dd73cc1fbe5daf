import { type ConductorEvent, conductorStep } from "../../lib/conductor/dispatch.js";

export async function handler(event: ConductorEvent): Promise<unknown> {
  return conductorStep(event);
}
