"""The library loaded from a relocated directory (bundled-app layout): the package is installed with
`cmake --install <build> --component python --prefix <tmp>` (kilnrt/{*.py, _kilnrt*.so, libkilnrt.so.N, bin/}
found through RPATH $ORIGIN) — or, without cmake, build/python/kilnrt copied with its symlinks resolved plus
libkilnrt.so.N — into a temporary directory; a fresh interpreter whose sys.path holds only that directory imports it,
loads libkilnrt from there (checked in /proc/self/maps), and runs the CUDA engines correctly."""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

import common


def child(root):
    def run(r):
        import kilnrt
        if not os.path.realpath(kilnrt.__file__).startswith(os.path.realpath(root)):
            raise AssertionError("kilnrt imported from %s, not from %s" % (kilnrt.__file__, root))
        engines = {m: common.load_engine(kilnrt, m) for m in common.MODELS}
        common.check_numpy_io(kilnrt, engines)
        libs = set()
        with open("/proc/self/maps") as f:
            for line in f:
                if "libkilnrt" in line or "_kilnrt" in line:
                    libs.add(line.split()[-1])
        outside = [p for p in libs if not os.path.realpath(p).startswith(os.path.realpath(root))]
        if outside:
            raise AssertionError("kilnrt libraries loaded from outside the bundle: %s" % outside)
        r.note("loaded: " + ", ".join(sorted(os.path.basename(p) for p in libs)))
    common.main(run)


def parent():
    build = os.environ.get("KILNRT_BUILD_DIR")
    if not build or not os.path.isdir(build):
        print("@@RESULT {\"status\": \"SKIP\", \"reason\": \"KILNRT_BUILD_DIR not set\"}")
        sys.exit(4)
    tmp = tempfile.mkdtemp(prefix="kilnrt-bundle-")
    layout = "cmake --install"
    try:
        rc = subprocess.run(["cmake", "--install", build, "--component", "python", "--prefix", tmp],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
        print(rc.stdout[-2000:])
        if rc.returncode != 0 or not glob.glob(os.path.join(tmp, "kilnrt", "_kilnrt*.so")):
            raise OSError("cmake --install failed (rc %d)" % rc.returncode)
    except (OSError, subprocess.SubprocessError) as e:
        layout = "copy (%s)" % e
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        shutil.copytree(os.path.join(build, "python", "kilnrt"), os.path.join(tmp, "kilnrt"), symlinks=False)
        for lib in glob.glob(os.path.join(build, "libkilnrt.so*")):
            shutil.copy2(os.path.realpath(lib), os.path.join(tmp, "kilnrt", os.path.basename(lib)))
    print("bundle layout: %s in %s: %s" % (layout, tmp, sorted(os.listdir(os.path.join(tmp, "kilnrt")))), flush=True)
    env = dict(os.environ, KILNRT_COEX_NO_PATH="1", PYTHONPATH=tmp)
    env.pop("LD_LIBRARY_PATH", None)
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "child", tmp], env=env, timeout=240,
                           cwd=tempfile.gettempdir())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(p.returncode)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "child":
        child(sys.argv[2])
    else:
        parent()
