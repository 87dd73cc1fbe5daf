// Neutron's networks, subnets and ports on one DynamoDB table, and the addresses they hold: the
// item layout and the reads in ./store/table.ts, one file per resource's writes, the IPAM in
// ./store/addresses.ts.
export { addressHolder, allocateAddress, releaseAddress } from "./store/addresses.js";
export { createNetwork, deleteNetwork, updateNetwork } from "./store/networks.js";
export {
  bindPort,
  createPort,
  deletePort,
  type PortBinding,
  portCreated,
  portShown,
  updatePort,
} from "./store/ports.js";
export { createSubnet, deleteSubnet, updateSubnet } from "./store/subnets.js";
export {
  type FixedIp,
  getNetwork,
  getPort,
  getSubnet,
  listNetworks,
  listPorts,
  listSubnets,
  type Network,
  type NewNetwork,
  type NewPort,
  networkingTable,
  type Port,
  portsOn,
  type Subnet,
  subnetsOn,
} from "./store/table.js";
