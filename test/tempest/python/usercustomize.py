# Imported by every Python that run.ts starts for `tempest run` (this directory is on their
# PYTHONPATH; site.py imports usercustomize at start-up). Debian's tempest carries
# add-delay-in-subnet-teardown.patch: SubnetsClient.delete_subnet sleeps 10 s first, for Neutron's
# DHCP ports to go before their subnet. Upstream tempest does not sleep, and novaless has no DHCP
# ports: the delete is sent at once, as upstream's client sends it. Nothing else is changed.
import importlib.abc
import importlib.util
import sys

_MODULE = "tempest.lib.services.network.subnets_client"


def _delete_subnet(self, subnet_id):
    uri = "/subnets/%s" % subnet_id
    return self.delete_resource(uri)


class _UpstreamDeleteSubnet(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != _MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            module.SubnetsClient.delete_subnet = _delete_subnet

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _UpstreamDeleteSubnet())
