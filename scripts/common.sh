# Shared by scripts/setup.sh, scripts/test.sh and .ci/run (source it; do not run it).
# Everything is overridable from the environment:
#   KILNRT_BUILD_DIR  CMake build tree (default: <repo>/build)
#   KILNRT_VENV       Python virtual environment (default: <repo>/.venv, made from Debian's /usr/bin/python3 with
#                     --system-site-packages so Debian's numpy / onnx / torch / pytest are visible)
#   KILNRT_JOBS       parallel build jobs (default: number of cores)
#   KILNRT_NO_APT=1   never call apt-get (just report what is missing)

KILNRT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KILNRT_BUILD_DIR="${KILNRT_BUILD_DIR:-$KILNRT_ROOT/build}"
KILNRT_VENV="${KILNRT_VENV:-$KILNRT_ROOT/.venv}"
KILNRT_JOBS="${KILNRT_JOBS:-$(nproc 2>/dev/null || echo 2)}"
KILNRT_PY="$KILNRT_VENV/bin/python"
# libgomp's default active spin-wait fights OpenBLAS's own threads for the cores (2 on CI): sleep when idle.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"

# Debian 12 (bookworm) packages: toolchain, libraries, and the Python stack the tests use (torch 1.13 exports the
# models of the acceptance tests). Versions are bookworm's.
KILNRT_APT_PACKAGES=(build-essential cmake ninja-build ccache git pkg-config libopenblas-dev libcli11-dev pybind11-dev
  libgtest-dev python3 python3-dev python3-venv python3-pip python3-numpy python3-onnx python3-pytest python3-torch
  python3-torchvision clang-14 libclang-rt-14-dev)
# Exact pins of what pip adds to the venv (build backend of `pip install .` and pybind11 for the extension).
KILNRT_PIP_PACKAGES=(scikit-build-core==0.10.7 pybind11==3.1.0)

kilnrt_log() { printf '\n==> %s\n' "$*"; }

kilnrt_missing_apt_packages() {
  local p missing=()
  for p in "${KILNRT_APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  echo "${missing[@]}"
}

kilnrt_ensure_apt() {
  command -v dpkg-query >/dev/null || { echo "not a Debian/Ubuntu system: install the equivalents of: ${KILNRT_APT_PACKAGES[*]}" >&2; return 1; }
  local missing
  missing="$(kilnrt_missing_apt_packages)"
  [ -z "$missing" ] && return 0
  kilnrt_log "installing Debian packages: $missing"
  if [ "${KILNRT_NO_APT:-0}" = 1 ]; then echo "KILNRT_NO_APT=1: install them yourself" >&2; return 1; fi
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "need root (or sudo) to apt-get install: $missing" >&2; return 1; }
    sudo="sudo"
  fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
  # shellcheck disable=SC2086
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
}

kilnrt_ensure_venv() {
  if [ ! -x "$KILNRT_PY" ]; then
    kilnrt_log "creating the virtual environment $KILNRT_VENV (Debian python3, --system-site-packages)"
    /usr/bin/python3 -m venv --system-site-packages "$KILNRT_VENV"
  fi
  local p need=()
  for p in "${KILNRT_PIP_PACKAGES[@]}"; do
    [ "$("$KILNRT_PY" -m pip show "${p%%==*}" 2>/dev/null | sed -n 's/^Version: //p')" = "${p##*==}" ] || need+=("$p")
  done
  if [ "${#need[@]}" -gt 0 ]; then
    kilnrt_log "pip install ${need[*]}"
    "$KILNRT_PY" -m pip install -q --disable-pip-version-check "${need[@]}"
  fi
}

kilnrt_build() {
  kilnrt_log "building kilnrt in $KILNRT_BUILD_DIR"
  cmake -S "$KILNRT_ROOT" -B "$KILNRT_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DPython_EXECUTABLE="$KILNRT_PY" "$@"
  cmake --build "$KILNRT_BUILD_DIR" -j "$KILNRT_JOBS"
}

# Environment under which the in-tree build is used: the `kilnrt` package from <build>/python, the CLI in <build>.
kilnrt_use_build_tree() {
  export PYTHONPATH="$KILNRT_BUILD_DIR/python${PYTHONPATH:+:$PYTHONPATH}"
  export KILNRT_BUILD_DIR
  export KILNRT_CLI="$KILNRT_BUILD_DIR/kilnrt"
  export PATH="$KILNRT_BUILD_DIR:$PATH"
}
