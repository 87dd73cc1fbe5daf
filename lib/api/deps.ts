// The I/O the routes do, in one object: the real repositories by default, fakes in unit tests.
import type { listDeadLetterQueues, peekDeadLetters, redrive } from "../aws/dead-letters.js";
import { queuedMessages } from "../aws/queues.js";
import { castToCompute, sendBuildRequest } from "../aws/send.js";
import {
  createAggregate,
  deleteAggregate,
  getAggregateRevision,
  listAggregates,
  saveAggregate,
} from "../catalog/aggregates.js";
import { createKeypair, deleteKeypair, getKeypair, listKeypairs } from "../catalog/keypairs.js";
import {
  addFlavorAccess,
  createFlavor,
  deleteFlavor,
  deleteFlavorExtraSpec,
  getFlavor,
  getImage,
  listFlavors,
  listImages,
  removeFlavorAccess,
  setFlavorDescription,
  setFlavorExtraSpecs,
} from "../catalog/repo.js";
import {
  addServerGroupMembers,
  createServerGroup,
  deleteServerGroup,
  forgetServerGroupMember,
  getServerGroup,
  listServerGroups,
  removeServerGroupMembers,
} from "../catalog/server-groups.js";
import { planDestinations } from "../conductor/select-destinations.js";
import { apiOptions, moveOptions, reclaimInstanceInterval } from "../config.js";
import { deleteServer } from "../instances/delete.js";
import { guestSpecFor } from "../instances/guest.js";
import { guestPortsOf } from "../instances/guest-ports.js";
import {
  allocateAttachment,
  beginAttach,
  beginDetach,
  resolveAttach,
  settleAttachFailed,
  settleDetachFailed,
} from "../instances/interfaces.js";
import { markLiveAbort, recordLiveAction } from "../instances/live-move.js";
import {
  createMigration,
  getMigration,
  listInstanceMigrations,
  listMigrations,
  nextMigrationId,
  pageMigrations,
  updateMigration,
} from "../instances/migrations.js";
import { beginConfirm, beginMove, beginRevert } from "../instances/move.js";
import { networkZones, validateNetworks } from "../instances/networking.js";
import { beginPowerAction, readConsoleOutput } from "../instances/power.js";
import { getInstance, listInstances, listServerPage } from "../instances/queries.js";
import { abandonRebuild, beginRebuild } from "../instances/rebuild.js";
import { getSchedulingDecision } from "../instances/scheduling-decisions.js";
import { resolveRequestedGroups, securityGroupNames } from "../instances/security-groups.js";
import { createInstances, markDeleted, updateServer } from "../instances/server-writes.js";
import { createShelvedImage } from "../instances/shelve.js";
import { deleteServerImage } from "../instances/snapshot.js";
import {
  abandonRestore,
  abandonSoftDelete,
  beginRestore,
  beginSoftDelete,
} from "../instances/soft-delete.js";
import { beginAction } from "../instances/transition.js";
import { abandonAction } from "../instances/workflows.js";
import { listAllocations } from "../placement/allocations.js";
import { auditPlacement } from "../placement/audit.js";
import { getHost, listHosts, readChangedHosts } from "../placement/hosts.js";
import { deleteInventory, setInventory } from "../placement/inventory.js";
import { getServiceHeartbeat, listServiceHeartbeats } from "../placement/liveness.js";
import { deleteComputeService, setServiceStatus } from "../placement/services.js";
import { dynamoQuotaStore, type QuotaStore } from "../quotas/store.js";

export interface ApiDeps {
  getFlavor: typeof getFlavor;
  listFlavors: typeof listFlavors;
  createFlavor: typeof createFlavor;
  setFlavorExtraSpecs: typeof setFlavorExtraSpecs;
  deleteFlavorExtraSpec: typeof deleteFlavorExtraSpec;
  deleteFlavor: typeof deleteFlavor;
  setFlavorDescription: typeof setFlavorDescription;
  addFlavorAccess: typeof addFlavorAccess;
  removeFlavorAccess: typeof removeFlavorAccess;
  getImage: typeof getImage;
  getKeypair: typeof getKeypair;
  listKeypairs: typeof listKeypairs;
  createKeypair: typeof createKeypair;
  deleteKeypair: typeof deleteKeypair;
  listImages: typeof listImages;
  createInstances: typeof createInstances;
  getInstance: typeof getInstance;
  listInstances: typeof listInstances;
  /** one page of GET /servers(/detail), read by index (lib/instances/queries.ts) */
  listServerPage: typeof listServerPage;
  getSchedulingDecision: typeof getSchedulingDecision;
  /** the Migrations table (os-migrations, /servers/{id}/migrations) */
  listMigrations: typeof listMigrations;
  /** os-migrations' pages from 2.59, read by index */
  pageMigrations: typeof pageMigrations;
  getMigration: typeof getMigration;
  listInstanceMigrations: typeof listInstanceMigrations;
  markDeleted: typeof markDeleted;
  updateServer: typeof updateServer;
  deleteServer: typeof deleteServer;
  sendBuildRequest: typeof sendBuildRequest;
  listHosts: typeof listHosts;
  getHost: typeof getHost;
  listAllocations: typeof listAllocations;
  setServiceStatus: typeof setServiceStatus;
  deleteComputeService: typeof deleteComputeService;
  /** a host queue's messages (DELETE /os-services); optional, as the Placement admin's below */
  queuedMessages?: typeof queuedMessages;
  listServiceHeartbeats: typeof listServiceHeartbeats;
  getServiceHeartbeat: typeof getServiceHeartbeat;
  /** Placement admin; optional, so fakes that do not exercise them need not provide them */
  setInventory?: typeof setInventory;
  deleteInventory?: typeof deleteInventory;
  auditPlacement?: typeof auditPlacement;
  /** the fleet's change feed (os-fleet?changes-since) */
  readChangedHosts?: typeof readChangedHosts;
  /** the dead-letter queues (os-dead-letters) */
  deadLetters?: DeadLetterDeps;
  listAggregates: typeof listAggregates;
  getAggregateRevision: typeof getAggregateRevision;
  createAggregate: typeof createAggregate;
  saveAggregate: typeof saveAggregate;
  deleteAggregate: typeof deleteAggregate;
  getServerGroup: typeof getServerGroup;
  listServerGroups: typeof listServerGroups;
  createServerGroup: typeof createServerGroup;
  deleteServerGroup: typeof deleteServerGroup;
  addServerGroupMembers: typeof addServerGroupMembers;
  removeServerGroupMembers: typeof removeServerGroupMembers;
  forgetServerGroupMember: typeof forgetServerGroupMember;
  planDestinations: typeof planDestinations;
  /** limits, the default class and usage (lib/quotas) */
  quotas: QuotaStore;
  /** the power actions and console output (server-actions.ts); optional for fakes that skip them */
  power?: PowerDeps;
  /** a create's networks (lib/instances/networking.ts); absent: no network service */
  network?: NetworkDeps;
  moves?: MoveDeps;
  /** os-migrateLive's wait and the in-progress live migration's actions (server-live-migrate.ts) */
  liveMigration?: LiveMigrationDeps;
  rebuild?: RebuildDeps;
  shelve?: ShelveDeps;
  /** a delete deferred (reclaim_instance_interval), restore and forceDelete; absent: deletes are at once */
  deferredDelete?: DeferredDeleteDeps;
  /** os-interface's attach and detach (server-interfaces.ts) */
  interfaces?: InterfaceDeps;
  now: () => Date;
}

/** What an interface attach and detach need besides the record (lib/instances/interfaces.ts). */
export interface InterfaceDeps {
  resolve: typeof resolveAttach;
  beginAttach: typeof beginAttach;
  allocate: typeof allocateAttachment;
  settleAttachFailed: typeof settleAttachFailed;
  beginDetach: typeof beginDetach;
  settleDetachFailed: typeof settleDetachFailed;
  guestPorts: typeof guestPortsOf;
  castToCompute: typeof castToCompute;
  /** how long an attach waits for its host's report (Nova's is an RPC call), and how often it looks */
  attachTimeoutMs: number;
  attachPollMs: number;
}

/** What a soft delete, restore and forceDelete need besides the record (lib/instances/soft-delete.ts). */
export interface DeferredDeleteDeps {
  /** [DEFAULT] reclaim_instance_interval: above 0 a delete is deferred */
  reclaimInterval: () => number;
  beginSoftDelete: typeof beginSoftDelete;
  abandonSoftDelete: typeof abandonSoftDelete;
  beginRestore: typeof beginRestore;
  abandonRestore: typeof abandonRestore;
  castToCompute: typeof castToCompute;
  guestSpecFor: typeof guestSpecFor;
  /** a SHELVED server's snapshot, deleted with its soft delete (Nova's _delete) */
  deleteServerImage: typeof deleteServerImage;
}

/** What shelve, shelveOffload and unshelve need besides the record (lib/instances/shelve.ts). */
export interface ShelveDeps {
  begin: typeof beginAction;
  abandon: typeof abandonAction;
  createShelvedImage: typeof createShelvedImage;
  castToCompute: typeof castToCompute;
  guestSpecFor: typeof guestSpecFor;
  /** [DEFAULT] shelved_offload_time: 0 offloads as it shelves */
  shelvedOffloadTime: () => number;
}

/** What the rebuild action needs besides the record (lib/instances/rebuild.ts). */
export interface RebuildDeps {
  begin: typeof beginRebuild;
  abandon: typeof abandonRebuild;
}

/** What a live migration needs besides the moves' (lib/instances/live-move.ts). */
export interface LiveMigrationDeps {
  getMigration: typeof getMigration;
  markAbort: typeof markLiveAbort;
  recordAction: typeof recordLiveAction;
  /** how long os-migrateLive waits for the conductor's verdict before 2.34, and how often it looks */
  verdictTimeoutMs: number;
  verdictPollMs: number;
}

/** What resize, migrate, confirmResize and revertResize need besides the record. */
export interface MoveDeps {
  nextMigrationId: typeof nextMigrationId;
  createMigration: typeof createMigration;
  updateMigration: typeof updateMigration;
  begin: typeof beginMove;
  abandon: typeof abandonAction;
  beginConfirm: typeof beginConfirm;
  beginRevert: typeof beginRevert;
  castToCompute: typeof castToCompute;
}

/** What os-dead-letters needs (lib/aws/dead-letters.ts). */
export interface DeadLetterDeps {
  list: typeof listDeadLetterQueues;
  peek: typeof peekDeadLetters;
  redrive: typeof redrive;
}

/** What a create's `networks` needs. */
export interface NetworkDeps {
  validate: typeof validateNetworks;
  zones: typeof networkZones;
  /** a create's security groups (lib/instances/security-groups.ts) */
  securityGroups: typeof resolveRequestedGroups;
  /** the names of groups by id, for the servers' views */
  groupNames: typeof securityGroupNames;
}

/** What os-stop, os-start, reboot and os-getConsoleOutput need besides the record. */
export interface PowerDeps {
  begin: typeof beginPowerAction;
  castToCompute: typeof castToCompute;
  guestSpecFor: typeof guestSpecFor;
  readConsoleOutput: typeof readConsoleOutput;
  /** how long os-getConsoleOutput waits for the host's answer, and how often it looks */
  consoleTimeoutMs: number;
  consolePollMs: number;
}

export const defaultDeps: ApiDeps = {
  deferredDelete: {
    reclaimInterval: reclaimInstanceInterval,
    beginSoftDelete,
    abandonSoftDelete,
    beginRestore,
    abandonRestore,
    castToCompute,
    guestSpecFor,
    deleteServerImage,
  },
  liveMigration: {
    getMigration,
    markAbort: markLiveAbort,
    recordAction: recordLiveAction,
    // well inside API Gateway's 29 s: a later verdict lands on the action (the answer is 202)
    verdictTimeoutMs: 20_000,
    verdictPollMs: 200,
  },
  rebuild: { begin: beginRebuild, abandon: abandonRebuild },
  shelve: {
    begin: beginAction,
    abandon: abandonAction,
    createShelvedImage,
    castToCompute,
    guestSpecFor,
    shelvedOffloadTime: () => moveOptions().shelvedOffloadTime,
  },
  moves: {
    nextMigrationId,
    createMigration,
    updateMigration,
    begin: beginMove,
    abandon: abandonAction,
    beginConfirm,
    beginRevert,
    castToCompute,
  },
  network: {
    validate: validateNetworks,
    zones: networkZones,
    securityGroups: resolveRequestedGroups,
    groupNames: securityGroupNames,
  },
  interfaces: {
    resolve: resolveAttach,
    beginAttach,
    allocate: allocateAttachment,
    settleAttachFailed,
    beginDetach,
    settleDetachFailed,
    guestPorts: guestPortsOf,
    castToCompute,
    // well inside API Gateway's 29 s: a later report still settles the attachment
    attachTimeoutMs: 20_000,
    attachPollMs: 100,
  },
  power: {
    begin: beginPowerAction,
    castToCompute,
    guestSpecFor,
    readConsoleOutput,
    consoleTimeoutMs: apiOptions().consoleTimeoutSeconds * 1000,
    consolePollMs: 200,
  },
  getFlavor,
  listFlavors,
  createFlavor,
  setFlavorExtraSpecs,
  deleteFlavorExtraSpec,
  deleteFlavor,
  setFlavorDescription,
  addFlavorAccess,
  removeFlavorAccess,
  getImage,
  getKeypair,
  listKeypairs,
  createKeypair,
  deleteKeypair,
  listImages,
  createInstances,
  getInstance,
  listInstances,
  listServerPage,
  getSchedulingDecision,
  listMigrations,
  pageMigrations,
  getMigration,
  listInstanceMigrations,
  markDeleted,
  updateServer,
  deleteServer,
  sendBuildRequest,
  listHosts,
  getHost,
  listAllocations,
  setServiceStatus,
  deleteComputeService,
  queuedMessages,
  listServiceHeartbeats,
  getServiceHeartbeat,
  setInventory,
  deleteInventory,
  auditPlacement,
  readChangedHosts,
  listAggregates,
  getAggregateRevision,
  createAggregate,
  saveAggregate,
  deleteAggregate,
  getServerGroup,
  listServerGroups,
  createServerGroup,
  deleteServerGroup,
  addServerGroupMembers,
  removeServerGroupMembers,
  forgetServerGroupMember,
  planDestinations,
  quotas: dynamoQuotaStore,
  now: () => new Date(),
};
