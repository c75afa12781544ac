"""The informer cache's label index answers a lister's ``List(selector)`` exactly as a scan does."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from k8semu.api.selectors import parse_label_selector
from k8semu.client.informer import LABELS_INDEX, NAMESPACE_INDEX, Indexer, label_index, namespace_index

_LABELS = st.dictionaries(st.sampled_from(["app", "tier", "env"]), st.sampled_from(["a", "b", "c"]), max_size=3)
_PODS = st.lists(st.tuples(st.sampled_from(["default", "other"]), _LABELS), max_size=25)
_SELECTORS = st.sampled_from(["app=a", "app=a,tier=b", "app in (a)", "app in (a,b)", "app!=a", "env",
                              "!env", "app=a,env notin (c)", "", "tier==c,app"])


@settings(max_examples=80, deadline=None)
@given(pods=_PODS, updates=_PODS, selector=_SELECTORS)
def test_select_matches_a_namespace_scan(pods, updates, selector):
    indexed = Indexer({NAMESPACE_INDEX: namespace_index, LABELS_INDEX: label_index})
    plain = Indexer({NAMESPACE_INDEX: namespace_index})
    for batch in (pods, updates):  # the second batch relabels pods of the first (same names)
        for i, (ns, labels) in enumerate(batch):
            obj = {"metadata": {"name": f"p{i}", "namespace": ns, "labels": labels}}
            indexed.upsert(obj)
            plain.upsert(obj)
    sel = parse_label_selector(selector)
    for ns in ("default", "other"):
        scan = [o for o in plain.by_index(NAMESPACE_INDEX, ns) if sel.matches(o["metadata"]["labels"])]
        assert indexed.select(ns, sel) == scan
        assert plain.select(ns, sel) == scan
