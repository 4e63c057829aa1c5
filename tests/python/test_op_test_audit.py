"""scripts/op_test_audit.py stays at zero: every op of the registry (`kilnrt ops`) is named by a C++ unit test
(tests/cpp/*.cc, src/**/*_test.cc), beyond the ONNX conformance cases."""
import importlib.util

from conftest import ROOT, cli_executable


def _audit_module():
    spec = importlib.util.spec_from_file_location("op_test_audit", ROOT / "scripts" / "op_test_audit.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_registry_op_has_a_unit_test():
    audit = _audit_module()
    ops = audit.registry_ops(cli_executable())
    assert len(ops) > 100, "`kilnrt ops` listed only %d ops" % len(ops)
    missing = audit.untested(ops, audit.test_sources())
    assert missing == [], "ops without a C++ unit test (add one to tests/cpp/test_op_edge_*.cc): %s" % missing


def test_audit_notices_an_untested_op():
    audit = _audit_module()
    sources = {"a.cc": 'Node n("Relu", 1);  // NotQuoted'}
    assert audit.untested(["Relu", "NotQuoted", "Softmax"], sources) == ["NotQuoted", "Softmax"]
