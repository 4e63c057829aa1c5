"""kilnrt.Error text: str(e) is one summary line, .detail holds the failing check and its source location (appended
to str(e) only with KILNRT_LOG_LEVEL=debug), file errors give the OS's reason, and a file that is not ONNX says so.
CPU only: none of these needs a GPU."""
import errno
import os
import random

import pytest

import kilnrt


@pytest.fixture
def quiet_level(monkeypatch):
    """KILNRT_LOG_LEVEL unset: errors raised now carry no detail in str()."""
    monkeypatch.delenv("KILNRT_LOG_LEVEL", raising=False)


def _raises(fn, *args, **kwargs):
    with pytest.raises(kilnrt.Error) as info:
        fn(*args, **kwargs)
    return info.value


def test_detail_holds_the_check_and_location(quiet_level, tmp_path):
    # A shape spec without "NAME:" fails a check in the native shape-spec parser.
    err = _raises(kilnrt.build, tmp_path / "unused.onnx", tmp_path / "never.engine", shapes=["no_colon_here"])
    assert err.code == "invalid_argument"
    assert isinstance(err.detail, str)
    assert err.detail.startswith("check '"), err.detail
    assert " failed at " in err.detail and ".cc:" in err.detail, err.detail
    assert "failed at" not in str(err), str(err)
    assert err.detail not in str(err)
    assert str(err).startswith("kilnrt invalid argument [no_colon_here]: "), str(err)
    assert "\n" not in str(err)


def test_debug_level_appends_the_detail(monkeypatch, tmp_path):
    monkeypatch.setenv("KILNRT_LOG_LEVEL", "debug")
    err = _raises(kilnrt.build, tmp_path / "unused.onnx", tmp_path / "never.engine", shapes=["no_colon_here"])
    assert err.detail and str(err).endswith(" (" + err.detail + ")"), (str(err), err.detail)


def test_python_side_errors_have_an_empty_detail():
    err = kilnrt.Error("something", "invalid_argument", "x")
    assert err.detail == "" and err.code == "invalid_argument" and err.where == "x"


def test_missing_model_gives_the_os_reason(quiet_level, tmp_path):
    missing = tmp_path / "does_not_exist.onnx"
    err = _raises(kilnrt.build, missing, tmp_path / "never.engine")
    assert err.code == "io"
    assert err.where == str(missing)
    assert "cannot open '%s': %s" % (missing, os.strerror(errno.ENOENT)) in str(err), str(err)
    assert "failed at" not in str(err)
    assert err.detail != "", "the location inside kilnrt is kept in .detail"


def test_directory_given_as_model(quiet_level, tmp_path):
    err = _raises(kilnrt.build, tmp_path, tmp_path / "never.engine")
    assert err.code == "io"
    assert err.where == str(tmp_path)
    assert os.strerror(errno.EISDIR) in str(err), str(err)


def test_missing_engine_gives_the_os_reason(quiet_level, tmp_path):
    missing = tmp_path / "does_not_exist.engine"
    err = _raises(kilnrt.Engine, missing)
    assert err.code == "io"
    assert os.strerror(errno.ENOENT) in str(err), str(err)


def _assert_not_onnx(err, path):
    assert err.code == "invalid_model", str(err)
    assert err.where == str(path)
    assert "'%s' is not an ONNX model (" % path in str(err), str(err)
    assert "byte offset" not in str(err) and "failed at" not in str(err), str(err)
    assert "\n" not in str(err)


@pytest.mark.parametrize("kind", ["text", "random", "png", "empty"])
def test_not_an_onnx_model(quiet_level, tmp_path, kind):
    path = tmp_path / ("%s.onnx" % kind)
    if kind == "text":
        path.write_text("hello, this is a text file and not a model\n")
    elif kind == "random":
        rng = random.Random(0)
        path.write_bytes(bytes(rng.getrandbits(8) for _ in range(300)))
    elif kind == "png":
        path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x06\x00\x00\x00")
    else:
        path.write_bytes(b"")
    _assert_not_onnx(_raises(kilnrt.build, path, tmp_path / "never.engine"), path)
    assert not (tmp_path / "never.engine").exists()


def test_engine_file_given_as_model(quiet_level, conv_engine_path, tmp_path):
    err = _raises(kilnrt.build, conv_engine_path, tmp_path / "never.engine")
    _assert_not_onnx(err, conv_engine_path)
    assert "kilnrt engine" in str(err) and "kilnrt run" in str(err) and "kilnrt.Engine" in str(err), str(err)
