// Every Compute API route, each module's table in turn. Within a table, static paths come before
// parameterized ones (the first route whose pattern, method and microversion range match wins).
import type { Route } from "../request.js";
import { instanceActionRoutes } from "./actions.js";
import { aggregateRoutes } from "./aggregates.js";
import { deadLetterRoutes } from "./dead-letters.js";
import { externalEventRoutes } from "./external-events.js";
import { flavorRoutes } from "./flavors.js";
import { fleetRoutes } from "./fleet.js";
import { hypervisorRoutes } from "./hypervisors.js";
import { imageRoutes } from "./images.js";
import { keypairRoutes } from "./keypairs.js";
import { limitsRoutes } from "./limits.js";
import { migrationRoutes } from "./migrations.js";
import { placementAuditRoutes } from "./placement-audit.js";
import { quotaRoutes } from "./quotas.js";
import { schedulingRoutes } from "./scheduling.js";
import { securityGroupRoutes } from "./security-groups.js";
import { serverActionRoutes } from "./server-actions.js";
import { serverDiagnosticsRoutes } from "./server-diagnostics.js";
import { serverGroupRoutes } from "./server-groups.js";
import { serverInterfaceRoutes } from "./server-interfaces.js";
import { liveMigrationRoutes } from "./server-live-migrate.js";
import { serverMetaRoutes } from "./server-meta.js";
import { serverPasswordRoutes } from "./server-password.js";
import { serverRoutes } from "./servers.js";
import { serviceRoutes } from "./services.js";
import { usageRoutes } from "./usage.js";
import { usageAuditLogRoutes } from "./usage-audit-log.js";

export const ROUTES: Route[] = [
  ...serverRoutes,
  ...serverMetaRoutes,
  ...serverActionRoutes,
  ...serverPasswordRoutes,
  ...serverInterfaceRoutes,
  ...securityGroupRoutes,
  ...serverDiagnosticsRoutes,
  ...instanceActionRoutes,
  ...migrationRoutes,
  ...liveMigrationRoutes,
  ...schedulingRoutes,
  ...flavorRoutes,
  ...imageRoutes,
  ...keypairRoutes,
  ...hypervisorRoutes,
  ...placementAuditRoutes,
  ...fleetRoutes,
  ...deadLetterRoutes,
  ...serviceRoutes,
  ...aggregateRoutes,
  ...serverGroupRoutes,
  ...quotaRoutes,
  ...limitsRoutes,
  ...usageRoutes,
  ...usageAuditLogRoutes,
  ...externalEventRoutes,
];
