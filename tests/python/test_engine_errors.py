"""Damaged engine files and unsupported models fail with kilnrt.Error naming the problem; nothing crashes."""
import struct

import numpy as np
import pytest
from onnx import helper

import kilnrt
from conftest import make_onnx_model, run_cli


def _corrupt(data, how):
    data = bytearray(data)
    if how == "truncated":
        return bytes(data[: len(data) * 2 // 3])
    if how == "truncated_header":
        return bytes(data[:20])
    if how == "flipped_byte":
        data[len(data) // 2] ^= 0x5A
        return bytes(data)
    if how == "flipped_last_byte":
        data[-1] ^= 0x01
        return bytes(data)
    if how == "wrong_magic":
        data[0:8] = b"NOTKILN!"
        return bytes(data)
    if how == "newer_version":
        version = struct.unpack_from("<I", data, 8)[0]  # format version: little-endian u32 after the 8-byte magic
        struct.pack_into("<I", data, 8, version + 1)
        return bytes(data)
    raise AssertionError(how)


# What each damage's message must mention (lower-case).
EXPECTED_WORDS = {
    "truncated": ("truncated",),
    "truncated_header": ("truncated",),
    "flipped_byte": ("checksum", "damaged"),
    "flipped_last_byte": ("checksum", "damaged"),
    "wrong_magic": ("magic", "not a kilnrt engine"),
    "newer_version": ("version", "newer"),
}


@pytest.mark.parametrize("how", sorted(EXPECTED_WORDS))
def test_damaged_engine_python(how, conv_engine_path, tmp_path):
    bad = _corrupt(conv_engine_path.read_bytes(), how)
    path = tmp_path / ("bad_%s.engine" % how)
    path.write_bytes(bad)
    for load in (lambda: kilnrt.Engine(path), lambda: kilnrt.Engine.from_bytes(bad)):
        with pytest.raises(kilnrt.Error) as info:
            load()
        err = info.value
        assert isinstance(err, RuntimeError)
        assert err.code == "invalid_engine", str(err)
        text = str(err).lower()
        for word in EXPECTED_WORDS[how]:
            assert word in text, "message for %s should mention %r: %s" % (how, word, err)
    assert str(path) in str(pytest.raises(kilnrt.Error, kilnrt.Engine, path).value), "the message names the file"


@pytest.mark.parametrize("how", sorted(EXPECTED_WORDS))
def test_damaged_engine_cli(how, conv_engine_path, tmp_path):
    path = tmp_path / "bad.engine"
    path.write_bytes(_corrupt(conv_engine_path.read_bytes(), how))
    for command in ("run", "inspect"):
        proc = run_cli(command, path, expect_rc=1)
        text = proc.stderr.lower()
        assert "invalid engine" in text, proc.stderr
        for word in EXPECTED_WORDS[how]:
            assert word in text, "kilnrt %s on a %s engine should mention %r: %s" % (command, how, word, proc.stderr)


def test_empty_and_missing_engine(tmp_path):
    empty = tmp_path / "empty.engine"
    empty.write_bytes(b"")
    with pytest.raises(kilnrt.Error) as info:
        kilnrt.Engine(empty)
    assert info.value.code == "invalid_engine"
    with pytest.raises(kilnrt.Error) as info:
        kilnrt.Engine(tmp_path / "does_not_exist.engine")
    assert info.value.code == "io" and "does_not_exist.engine" in str(info.value)
    run_cli("run", empty, expect_rc=1)


@pytest.fixture
def unknown_op_model(tmp_path):
    return make_onnx_model(tmp_path / "unknown_op.onnx",
                           [helper.make_node("Relu", ["x"], ["r"], name="relu_ok"),
                            helper.make_node("FrobnicateTensor", ["r"], ["y"], name="mystery_node_7")],
                           [("x", [1, 4])], [("y", [1, 4])], check=False)


def test_unknown_op_fails_build_python(unknown_op_model, tmp_path):
    with pytest.raises(kilnrt.Error) as info:
        kilnrt.build(unknown_op_model, tmp_path / "never.engine")
    err = info.value
    assert err.code in ("unsupported", "invalid_model"), str(err)
    assert "mystery_node_7" in str(err), "the error should name the node: %s" % err
    assert "FrobnicateTensor" in str(err), "the error should name the op: %s" % err
    assert not (tmp_path / "never.engine").exists()


def test_unknown_op_fails_build_cli(unknown_op_model, tmp_path):
    proc = run_cli("build", unknown_op_model, "-o", tmp_path / "never.engine", expect_rc=1)
    assert "mystery_node_7" in proc.stderr and "FrobnicateTensor" in proc.stderr, proc.stderr


def test_not_an_onnx_file(tmp_path):
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(np.random.RandomState(0).bytes(300))
    with pytest.raises(kilnrt.Error) as info:
        kilnrt.build(junk, tmp_path / "never.engine")
    assert str(junk) in str(info.value)
    run_cli("build", junk, "-o", tmp_path / "never.engine", expect_rc=1)
