"""Sequence ops inside real exports: torch 1.13 TorchScript exports of list building in a loop (Loop with
a sequence state: SequenceEmpty, SequenceInsert, ConcatFromSequence) and of torch.split over a list
(SplitToSequence, Loop over SequenceAt), built into CPU engines with a dynamic leading dim and compared with torch.
"""
import io

import numpy as np
import pytest

import kilnrt

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")


class ListBuilder(torch.nn.Module):
    def forward(self, x):
        parts = []
        for i in range(x.size(0)):
            parts.append(x[i] * (i + 1))
        return torch.cat(parts, 0)


class SplitSum(torch.nn.Module):
    def forward(self, x):
        pieces = torch.split(x, 2, 0)
        out = []
        for p in pieces:
            out.append(p.sum(0, keepdim=True))
        return torch.cat(out, 0)


def ops_of(graph):
    for n in graph.node:
        yield n.op_type
        for a in n.attribute:
            if a.g.node:
                yield from ops_of(a.g)


def export(module, tmp_path, name):
    f = io.BytesIO()
    torch.onnx.export(torch.jit.script(module), (torch.randn(3, 4),), f, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "n"}}, opset_version=13)
    path = tmp_path / (name + ".onnx")
    path.write_bytes(f.getvalue())
    return path, set(ops_of(onnx.load_from_string(f.getvalue()).graph))


@pytest.mark.parametrize("module,name,expected_ops", [
    (ListBuilder(), "list_builder", {"SequenceEmpty", "SequenceInsert", "ConcatFromSequence", "Loop"}),
    (SplitSum(), "split_sum", {"SplitToSequence", "ConcatFromSequence", "Loop"}),
])
def test_torch_list_export_runs_on_cpu(module, name, expected_ops, tmp_path):
    path, ops = export(module, tmp_path, name)
    assert expected_ops <= ops, "torch exported %s without the sequence ops %s" % (sorted(ops), expected_ops - ops)
    engine = kilnrt.Engine(kilnrt.build(path, tmp_path / (name + ".engine"), device="cpu"))
    for n in (1, 3, 6):
        x = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
        want = module(torch.from_numpy(x)).numpy()
        got = engine(x)
        assert got.shape == want.shape, (n, got.shape, want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
