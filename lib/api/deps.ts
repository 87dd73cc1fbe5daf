// The I/O the routes do, in one object: the real repositories by default, fakes in unit tests.
import {
  createFlavor,
  getFlavor,
  getImage,
  listFlavors,
  listImages,
  setFlavorExtraSpecs,
} from "../catalog/repo.js";
import { sendBuildRequest } from "../conductor/queues.js";
import { deleteServer } from "../instances/delete.js";
import { createInstances, getInstance, listInstances, markDeleted } from "../instances/repo.js";
import { getHost, listHosts } from "../placement/hosts.js";
import { setServiceStatus } from "../placement/services.js";

export interface ApiDeps {
  getFlavor: typeof getFlavor;
  listFlavors: typeof listFlavors;
  createFlavor: typeof createFlavor;
  setFlavorExtraSpecs: typeof setFlavorExtraSpecs;
  getImage: typeof getImage;
  listImages: typeof listImages;
  createInstances: typeof createInstances;
  getInstance: typeof getInstance;
  listInstances: typeof listInstances;
  markDeleted: typeof markDeleted;
  deleteServer: typeof deleteServer;
  sendBuildRequest: typeof sendBuildRequest;
  listHosts: typeof listHosts;
  getHost: typeof getHost;
  setServiceStatus: typeof setServiceStatus;
  now: () => Date;
}

export const defaultDeps: ApiDeps = {
  getFlavor,
  listFlavors,
  createFlavor,
  setFlavorExtraSpecs,
  getImage,
  listImages,
  createInstances,
  getInstance,
  listInstances,
  markDeleted,
  deleteServer,
  sendBuildRequest,
  listHosts,
  getHost,
  setServiceStatus,
  now: () => new Date(),
};
