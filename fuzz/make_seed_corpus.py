#!/usr/bin/env python3
"""Writes the seed corpora of the fuzzers (fuzz/README.md).

  fuzz/make_seed_corpus.py --out DIR [--cli PATH] [--max-bytes N]

DIR/onnx/    the ONNX models of the ONNX node test cases (generated from the installed onnx package, as the conformance
             runner does) that are at most --max-bytes, plus small models written here: a dynamic-batch Conv/Pool/Gemm
             network, a Shape->Gather->Concat->Reshape chain, If and Loop with outer-scope reads
DIR/engine/  CPU engine files built from those models with the kilnrt CLI (--cli, default: the first of
             build-fuzz/kilnrt, build/kilnrt that exists); models that do not build are skipped
Needs numpy and onnx (the project's .venv has both).
"""
import argparse
import hashlib
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))


def node_case_models():
    import run_conformance  # noqa: E402 - the generator logic lives there
    cases, _ = run_conformance.generate_cases()
    for case in sorted(cases, key=lambda c: c.name):
        yield case.name, case.model.SerializeToString()


def handmade_models():
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    def model(nodes, inputs, outputs, inits=(), opset=13):
        g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()

    f = TensorProto.FLOAT
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")
    fc = numpy_helper.from_array(rng.standard_normal((10, 4)).astype(np.float32), "fc")
    yield "cnn_dynamic_batch", model(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("GlobalAveragePool", ["r"], ["p"]), helper.make_node("Flatten", ["p"], ["fl"]),
         helper.make_node("Gemm", ["fl", "fc"], ["y"], transB=1)],
        [helper.make_tensor_value_info("x", f, ["batch", 3, 8, 8])],
        [helper.make_tensor_value_info("y", f, ["batch", 10])], [w, b, fc])
    idx = numpy_helper.from_array(np.array([0], np.int64), "idx")
    minus1 = numpy_helper.from_array(np.array([-1], np.int64), "minus1")
    yield "shape_chain", model(
        [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "idx"], ["n"], axis=0),
         helper.make_node("Concat", ["n", "minus1"], ["ns"], axis=0), helper.make_node("Reshape", ["x", "ns"], ["y"])],
        [helper.make_tensor_value_info("x", f, ["batch", 3, 4])],
        [helper.make_tensor_value_info("y", f, ["batch", 12])], [idx, minus1])
    then_g = helper.make_graph([helper.make_node("Add", ["x", "x"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", f, [2])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", f, [2])])
    yield "if_outer_scope", model(
        [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0), helper.make_node("Greater", ["s", "zero"], ["c"]),
         helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
        [helper.make_tensor_value_info("x", f, [2])], [helper.make_tensor_value_info("y", f, [2])],
        [numpy_helper.from_array(np.array(0, np.float32), "zero")])
    body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "x"], ["acc_out"]), helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("acc_in", f, [2])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", f, [2])])
    yield "loop_outer_scope", model(
        [helper.make_node("Loop", ["trip", "", "x"], ["y"], body=body)],
        [helper.make_tensor_value_info("x", f, [2])], [helper.make_tensor_value_info("y", f, [2])],
        [numpy_helper.from_array(np.array(3, np.int64), "trip")])


def find_cli(explicit):
    for c in ([explicit] if explicit else [os.path.join(ROOT, "build-fuzz", "kilnrt"), os.path.join(ROOT, "build", "kilnrt")]):
        if c and os.access(c, os.X_OK):
            return c
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--cli", default=None)
    p.add_argument("--max-bytes", type=int, default=32768)
    p.add_argument("--max-engines", type=int, default=400, help="engines to build (the first N models that build)")
    args = p.parse_args()
    onnx_dir, engine_dir = os.path.join(args.out, "onnx"), os.path.join(args.out, "engine")
    os.makedirs(onnx_dir, exist_ok=True)
    os.makedirs(engine_dir, exist_ok=True)
    models = [(n, m) for n, m in list(handmade_models()) + list(node_case_models()) if len(m) <= args.max_bytes]
    for name, data in models:
        with open(os.path.join(onnx_dir, name + ".onnx"), "wb") as f:
            f.write(data)
    print("onnx seeds: %d in %s" % (len(models), onnx_dir))
    cli = find_cli(args.cli)
    if not cli:
        print("no kilnrt CLI found (build one or pass --cli): engine seeds not written")
        return 0
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
    built, seen = 0, set()
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in models:
            if built >= args.max_engines:
                break
            out = os.path.join(tmp, "e")
            r = subprocess.run([cli, "build", os.path.join(onnx_dir, name + ".onnx"), "-o", out, "--device", "cpu"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, timeout=60)
            if r.returncode != 0 or not os.path.exists(out):
                continue
            engine = open(out, "rb").read()
            digest = hashlib.sha1(engine).hexdigest()
            if len(engine) > args.max_bytes or digest in seen:
                continue
            seen.add(digest)
            with open(os.path.join(engine_dir, name + ".engine"), "wb") as f:
                f.write(engine)
            built += 1
    print("engine seeds: %d in %s (built with %s)" % (built, engine_dir, cli))
    return 0


if __name__ == "__main__":
    sys.exit(main())
