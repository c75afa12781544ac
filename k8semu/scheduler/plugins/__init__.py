"""The in-tree scheduler plugins, one module per plugin (upstream ``framework/plugins``).

:func:`in_tree_registry` maps each plugin's name to its factory
``(args, handle) -> plugin``.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from . import (balanced_allocation, defaultbinder, defaultpreemption, fit, imagelocality, interpodaffinity,
               nodeaffinity, nodename, nodeports, nodeunschedulable, podtopologyspread, queuesort,
               schedulinggates, tainttoleration, volumebinding, volumerestrictions)

__all__ = ["in_tree_registry"]


def in_tree_registry() -> dict[str, Callable[[Mapping[str, Any], Any], Any]]:
    """``{plugin name: factory}`` for every plugin k8semu implements."""
    return {
        queuesort.NAME: queuesort.PrioritySort,
        schedulinggates.NAME: schedulinggates.SchedulingGates,
        nodeunschedulable.NAME: nodeunschedulable.NodeUnschedulable,
        nodename.NAME: nodename.NodeName,
        tainttoleration.NAME: tainttoleration.TaintToleration,
        nodeaffinity.NAME: nodeaffinity.NodeAffinity,
        nodeports.NAME: nodeports.NodePorts,
        fit.NAME: fit.NodeResourcesFit,
        balanced_allocation.NAME: balanced_allocation.NodeResourcesBalancedAllocation,
        volumerestrictions.NAME: volumerestrictions.VolumeRestrictions,
        volumebinding.NAME: volumebinding.VolumeBinding,
        podtopologyspread.NAME: podtopologyspread.PodTopologySpread,
        interpodaffinity.NAME: interpodaffinity.InterPodAffinity,
        imagelocality.NAME: imagelocality.ImageLocality,
        defaultpreemption.NAME: defaultpreemption.DefaultPreemption,
        defaultbinder.NAME: defaultbinder.DefaultBinder,
    }
