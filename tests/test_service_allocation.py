"""Service ClusterIP / NodePort allocation and type changes, through the API as a user makes them.

Each case mirrors kube-apiserver v1.33 (MultiCIDRServiceAllocator GA, the bitmap allocator
dual-written): the service registry's ``beginCreate`` / ``beginUpdate`` hooks
(pkg/registry/core/service/storage: ``normalizeClusterIPs``, ``patchAllocatedValues``,
alloc.go's ``allocateCreate`` / ``allocateUpdate``) run before the strategy and validation,
so an allocator error is reported on its own; the strategy's ``dropTypeDependentFields``
clears what a change of ``type`` no longer uses; a deleted Service frees what it held.
"""

from __future__ import annotations

import ipaddress

import pytest

from k8semu.api import errors
from k8semu.api.apiserver import JSON_PATCH, MERGE_PATCH
from k8semu.sim.cluster import Cluster


@pytest.fixture
def api():
    return Cluster.create(seed=1).api


def svc(name="web", **spec):
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": {"app": name}, "ports": [{"port": 80}], **spec}}


def create(api, obj, **kw):
    return api.create("services", obj, namespace="default", **kw)


def patch(api, name, body, kind=MERGE_PATCH, **kw):
    return api.patch("services", name, body, kind, namespace="default", **kw)


def get(api, name):
    return api.get("services", name, namespace="default")


def fails(exc_type, fn, *args, **kw) -> errors.StatusError:
    with pytest.raises(exc_type) as info:
        fn(*args, **kw)
    return info.value


# ---------------------------------------------------------------- clusterIP on create


def test_cluster_ip_outside_the_service_cidr_is_refused(api):
    """v1.33's MetaAllocator finds no ServiceCIDR holding the IP: ErrMismatchedNetwork, as
    ``spec.clusterIPs`` Invalid (alloc.go allocIPs: ``failed to allocate IP %v: %v``)."""
    e = fails(errors.Invalid, create, api, svc("a", clusterIP="1.2.3.4"))
    assert e.code == 422 and e.reason == "Invalid"
    assert e.message == ('Service "a" is invalid: spec.clusterIPs: Invalid value: []string{"1.2.3.4"}: '
                         "failed to allocate IP 1.2.3.4: the provided network does not match the current range")
    assert e.details["causes"] == [{"reason": "FieldValueInvalid", "field": "spec.clusterIPs",
                                    "message": 'Invalid value: []string{"1.2.3.4"}: failed to allocate IP '
                                               "1.2.3.4: the provided network does not match the current range"}]
    fails(errors.NotFound, get, api, "a")


def test_network_address_of_the_range_is_not_in_the_valid_range(api):
    """The bitmap allocator (dual write) refuses the network address with ErrNotInRange."""
    e = fails(errors.Invalid, create, api, svc("a", clusterIP="10.96.0.0"))
    assert e.message == ('Service "a" is invalid: spec.clusterIPs: Invalid value: []string{"10.96.0.0"}: '
                         "failed to allocate IP 10.96.0.0: the provided IP (10.96.0.0) is not in the valid "
                         "range. The range of valid IPs is 10.96.0.0/12")


def test_cluster_ip_of_another_service_is_already_allocated(api):
    """ErrAllocated, for the ``kubernetes`` Service's 10.96.0.1 as for any user Service's IP."""
    e = fails(errors.Invalid, create, api, svc("b", clusterIP="10.96.0.1"))
    assert e.message == ('Service "b" is invalid: spec.clusterIPs: Invalid value: []string{"10.96.0.1"}: '
                         "failed to allocate IP 10.96.0.1: provided IP is already allocated")
    mine = create(api, svc("c", clusterIP="10.96.0.50"))
    assert mine["spec"]["clusterIP"] == "10.96.0.50" and mine["spec"]["clusterIPs"] == ["10.96.0.50"]
    e = fails(errors.Invalid, create, api, svc("d", clusterIP="10.96.0.50", clusterIPs=["10.96.0.50"]))
    assert e.message.endswith("failed to allocate IP 10.96.0.50: provided IP is already allocated")


def test_allocation_error_comes_before_validation(api):
    """beginCreate runs before the strategy's Validate: only the allocator's error is reported."""
    e = fails(errors.Invalid, create, api, svc("a", clusterIP="1.2.3.4", sessionAffinity="Sticky"))
    assert "sessionAffinity" not in e.message and len(e.details["causes"]) == 1


def test_malformed_and_inconsistent_cluster_ips(api):
    """initIPFamilyFields runs ValidateServiceClusterIPsRelatedFields before allocating."""
    e = fails(errors.Invalid, create, api, svc("a", clusterIP="10.96.0.300"))
    assert e.message == ('Service "a" is invalid: spec.clusterIPs[0]: Invalid value: "10.96.0.300": must be a '
                         "valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")
    e = fails(errors.Invalid, create, api, svc("a", clusterIP="10.96.0.7", clusterIPs=["10.96.0.8"]))
    assert e.message == ('Service "a" is invalid: spec.clusterIPs: Invalid value: []string{"10.96.0.8"}: '
                         "first value must match `clusterIP`")
    e = fails(errors.Invalid, create, api, svc("a", clusterIPs=["10.96.0.8"]))
    assert e.message == ('Service "a" is invalid: spec.clusterIPs: Invalid value: []string{"10.96.0.8"}: '
                         "must be empty when `clusterIP` is not specified")


def test_dynamic_cluster_ip_is_in_the_upper_range_and_deterministic():
    """AllocateNext picks from the upper range (above the static 1/16); the seeded RNG makes
    two clusters with one seed hand out the same IPs and ports."""
    got = []
    for _ in range(2):
        api = Cluster.create(seed=7).api
        a = create(api, svc("a", type="NodePort", ports=[{"port": 80, "name": "http"},
                                                           {"port": 443, "name": "https"}]))
        got.append((a["spec"]["clusterIP"], [p["nodePort"] for p in a["spec"]["ports"]]))
    assert got[0] == got[1]
    ip, ports = got[0]
    net = ipaddress.ip_network("10.96.0.0/12")
    assert ipaddress.ip_address(ip) in net and int(ipaddress.ip_address(ip)) - int(net.network_address) >= 256
    assert len(set(ports)) == 2 and all(30000 <= p <= 32767 for p in ports)


# ---------------------------------------------------------------- nodePort


def test_node_port_of_another_service_is_already_allocated(api):
    """The port allocator's ErrAllocated on ``spec.ports[i].nodePort`` (initNodePorts)."""
    create(api, svc("np1", type="NodePort", ports=[{"port": 80, "nodePort": 31220}]))
    e = fails(errors.Invalid, create, api, svc("np2", type="NodePort",
                                               ports=[{"port": 81, "name": "a"}, {"port": 80, "name": "b",
                                                                                  "nodePort": 31220}]))
    assert e.code == 422
    assert e.message == ('Service "np2" is invalid: spec.ports[1].nodePort: Invalid value: 31220: provided port '
                         "is already allocated")
    fails(errors.NotFound, get, api, "np2")


def test_node_port_out_of_range_is_the_allocators_error_alone(api):
    e = fails(errors.Invalid, create, api, svc("np", type="NodePort", sessionAffinity="Sticky",
                                               ports=[{"port": 80, "nodePort": 8080}]))
    assert e.message == ('Service "np" is invalid: spec.ports[0].nodePort: Invalid value: 8080: provided port is '
                         "not in the valid range. The range of valid ports is 30000-32767")


def test_adding_a_used_node_port_on_update_is_refused(api):
    """updateNodePorts allocates a nodePort the old Service did not have."""
    create(api, svc("np1", type="NodePort", ports=[{"port": 80, "nodePort": 31220}]))
    create(api, svc("np2", type="NodePort"))
    e = fails(errors.Invalid, patch, api, "np2", [{"op": "replace", "path": "/spec/ports/0/nodePort",
                                                   "value": 31220}], JSON_PATCH)
    assert e.message == ('Service "np2" is invalid: spec.ports[0].nodePort: Invalid value: 31220: provided port '
                         "is already allocated")
    # keeping its own nodePort is no allocation at all
    own = get(api, "np1")
    assert patch(api, "np1", {"metadata": {"labels": {"x": "y"}}})["spec"]["ports"] == own["spec"]["ports"]


def test_ports_with_one_number_share_one_node_port_on_create(api):
    """initNodePorts: a second port with the same number (UDP beside TCP) gets the same nodePort."""
    s = create(api, svc("dns", type="NodePort", ports=[{"port": 53, "name": "dns", "protocol": "UDP"},
                                                       {"port": 53, "name": "dns-tcp", "protocol": "TCP"}]))
    a, b = (p["nodePort"] for p in s["spec"]["ports"])
    assert a == b


def test_load_balancer_local_gets_a_health_check_node_port(api):
    """NeedsHealthCheck (LoadBalancer, externalTrafficPolicy Local) allocates one; a requested
    one that is taken is a 500 (allocHealthCheckNodePort wrapped in NewInternalError)."""
    lb = create(api, svc("lb", type="LoadBalancer", externalTrafficPolicy="Local"))
    hc = lb["spec"]["healthCheckNodePort"]
    assert 30000 <= hc <= 32767 and hc != lb["spec"]["ports"][0]["nodePort"]
    create(api, svc("np1", type="NodePort", ports=[{"port": 80, "nodePort": 31220}]))
    e = fails(errors.InternalError, create, api, svc("lb2", type="LoadBalancer", externalTrafficPolicy="Local",
                                                     healthCheckNodePort=31220))
    assert e.code == 500 and e.reason == "InternalError"
    assert e.message == ("Internal error occurred: failed to allocate requested HealthCheck NodePort 31220: "
                         "provided port is already allocated")
    # no longer Local: the health-check port is dropped (and freed)
    cluster = patch(api, "lb", {"spec": {"externalTrafficPolicy": "Cluster"}})
    assert "healthCheckNodePort" not in cluster["spec"]
    create(api, svc("np2", type="NodePort", ports=[{"port": 80, "nodePort": hc}]))


def test_no_node_ports_when_load_balancer_does_not_allocate_them(api):
    lb = create(api, svc("lb", type="LoadBalancer", allocateLoadBalancerNodePorts=False))
    assert "nodePort" not in lb["spec"]["ports"][0]


# ---------------------------------------------------------------- clusterIP on update


def test_changing_cluster_ip_alone_is_refused_and_leaves_the_service_alone(api):
    """normalizeClusterIPs makes clusterIPs follow a clusterIP changed alone; validation then
    refuses the change of clusterIPs[0] (validateUpgradeDowngradeClusterIPs)."""
    before = create(api, svc("web"))
    e = fails(errors.Invalid, patch, api, "web", {"spec": {"clusterIP": "10.96.0.99"}})
    assert e.message == ('Service "web" is invalid: spec.clusterIPs[0]: Invalid value: []string{"10.96.0.99"}: '
                         "may not change once set")
    after = get(api, "web")
    assert after == before and after["spec"]["clusterIPs"] == [after["spec"]["clusterIP"]]


def test_changing_cluster_ips_alone_must_match_cluster_ip(api):
    create(api, svc("web"))
    e = fails(errors.Invalid, patch, api, "web", {"spec": {"clusterIPs": ["10.96.0.99"]}})
    assert e.message == ('Service "web" is invalid: spec.clusterIPs: Invalid value: []string{"10.96.0.99"}: '
                         "first value must match `clusterIP`")


def test_replace_without_cluster_ip_keeps_it(api):
    """patchAllocatedValues: a PUT of the manifest as first sent keeps what was allocated."""
    first = create(api, svc("web", type="NodePort"))
    body = {**svc("web", type="NodePort"),
            "metadata": {"name": "web", "resourceVersion": first["metadata"]["resourceVersion"]}}
    again = api.update("services", body, namespace="default")
    assert again["spec"]["clusterIP"] == first["spec"]["clusterIP"]
    assert again["spec"]["ports"][0]["nodePort"] == first["spec"]["ports"][0]["nodePort"]


# ---------------------------------------------------------------- type changes


def test_node_port_to_cluster_ip_drops_node_ports_and_frees_them(api):
    """dropTypeDependentFields: nodePorts and externalTrafficPolicy kept from the NodePort
    Service are cleared (and released); the clusterIP stays."""
    np = create(api, svc("web", type="NodePort", ports=[{"port": 80, "nodePort": 31220}]))
    got = patch(api, "web", {"spec": {"type": "ClusterIP"}})
    assert got["spec"]["type"] == "ClusterIP"
    assert got["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert "externalTrafficPolicy" not in got["spec"]
    assert got["spec"]["clusterIP"] == np["spec"]["clusterIP"] and got["spec"]["internalTrafficPolicy"] == "Cluster"
    other = create(api, svc("other", type="NodePort", ports=[{"port": 80, "nodePort": 31220}]))
    assert other["spec"]["ports"][0]["nodePort"] == 31220


def test_type_change_that_also_sets_a_new_node_port_is_refused(api):
    """A nodePort the user added is not the old value, so it is not dropped: validation refuses it."""
    create(api, svc("web", type="NodePort", ports=[{"port": 80, "nodePort": 31220}]))
    e = fails(errors.Invalid, patch, api, "web", {"spec": {"type": "ClusterIP",
                                                          "ports": [{"port": 80, "nodePort": 31221}]}})
    assert e.message == ('Service "web" is invalid: spec.ports[0].nodePort: Forbidden: may not be used when '
                         "`type` is 'ClusterIP'")


def test_cluster_ip_to_node_port_allocates_node_ports(api):
    create(api, svc("web"))
    got = patch(api, "web", {"spec": {"type": "NodePort"}})
    assert 30000 <= got["spec"]["ports"][0]["nodePort"] <= 32767
    assert got["spec"]["externalTrafficPolicy"] == "Cluster"


def test_to_external_name_drops_the_cluster_ip_and_frees_it(api):
    """Going to ExternalName clears clusterIP(s), ipFamilies, ipFamilyPolicy, nodePorts and
    externalTrafficPolicy kept from before (updateClusterIPs releases the IP)."""
    np = create(api, svc("web", type="NodePort"))
    ip, port = np["spec"]["clusterIP"], np["spec"]["ports"][0]["nodePort"]
    got = patch(api, "web", {"spec": {"type": "ExternalName", "externalName": "db.example.com"}})
    spec = got["spec"]
    assert spec["type"] == "ExternalName" and spec["externalName"] == "db.example.com"
    for k in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "externalTrafficPolicy"):
        assert k not in spec, k
    assert "nodePort" not in spec["ports"][0]
    taken = create(api, svc("again", type="NodePort", clusterIP=ip, ports=[{"port": 80, "nodePort": port}]))
    assert taken["spec"]["clusterIPs"] == [ip] and taken["spec"]["ports"][0]["nodePort"] == port


def test_external_name_with_a_cluster_ip_is_forbidden(api):
    e = fails(errors.Invalid, create, api, svc("ext", type="ExternalName", externalName="db.example.com",
                                               clusterIP="10.96.0.40"))
    assert e.message == 'Service "ext" is invalid: spec.clusterIPs: Forbidden: may not be set for ExternalName services'


def test_external_name_to_cluster_ip_allocates_one(api):
    """updateClusterIPs case A: from ExternalName a clusterIP is allocated (or the named one checked)."""
    create(api, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ext"},
                 "spec": {"type": "ExternalName", "externalName": "db.example.com"}})
    got = patch(api, "ext", {"spec": {"type": "ClusterIP", "externalName": None, "ports": [{"port": 80}]}})
    ip = got["spec"]["clusterIP"]
    assert ipaddress.ip_address(ip) in ipaddress.ip_network("10.96.0.0/12") and got["spec"]["clusterIPs"] == [ip]
    assert got["spec"]["ipFamilies"] == ["IPv4"] and got["spec"]["ipFamilyPolicy"] == "SingleStack"
    create(api, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ext2"},
                 "spec": {"type": "ExternalName", "externalName": "db.example.com"}})
    e = fails(errors.Invalid, patch, api, "ext2", {"spec": {"type": "ClusterIP", "clusterIP": ip,
                                                          "externalName": None, "ports": [{"port": 80}]}})
    assert e.message == (f'Service "ext2" is invalid: spec.clusterIPs: Invalid value: []string{{"{ip}"}}: '
                         f"failed to allocate IP {ip}: provided IP is already allocated")


def test_external_traffic_policy_on_a_cluster_ip_service(api):
    """validateServiceExternalTrafficPolicy: only externally-accessible Services take it."""
    e = fails(errors.Invalid, create, api, svc("web", externalTrafficPolicy="Local"))
    assert e.message == ('Service "web" is invalid: spec.externalTrafficPolicy: Invalid value: "Local": may only '
                         "be set for externally-accessible services")


# ---------------------------------------------------------------- delete, dry run


def test_deleting_a_service_frees_its_cluster_ip_and_node_ports(api):
    create(api, svc("a", type="NodePort", clusterIP="10.96.0.60", ports=[{"port": 80, "nodePort": 30111}]))
    e = fails(errors.Invalid, create, api, svc("b", type="NodePort", clusterIP="10.96.0.60"))
    assert "provided IP is already allocated" in e.message
    api.delete("services", "a", namespace="default")
    b = create(api, svc("b", type="NodePort", clusterIP="10.96.0.60", ports=[{"port": 80, "nodePort": 30111}]))
    assert b["spec"]["clusterIP"] == "10.96.0.60" and b["spec"]["ports"][0]["nodePort"] == 30111


def test_dry_run_reports_allocation_errors_and_holds_nothing(api):
    create(api, svc("a", type="NodePort", ports=[{"port": 80, "nodePort": 30111}]))
    e = fails(errors.Invalid, create, api, svc("b", type="NodePort", ports=[{"port": 80, "nodePort": 30111}]),
              dry_run=True)
    assert e.message.endswith("spec.ports[0].nodePort: Invalid value: 30111: provided port is already allocated")
    dry = create(api, svc("c", clusterIP="10.96.0.61"), dry_run=True)
    assert dry["spec"]["clusterIPs"] == ["10.96.0.61"]
    assert create(api, svc("d", clusterIP="10.96.0.61"))["spec"]["clusterIP"] == "10.96.0.61"
