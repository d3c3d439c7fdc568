#!/usr/bin/env bash
# Create the virtual environment and install medcite with the extras asked for: `make demo` asks
# for "app" (the default chain, its index build, the server), `make test` for "all,dev,bench".
# torch is installed first and pinned (2.13.0, CPU) by pip, which finds the CPU wheel this machine
# keeps on disk (PIP_FIND_LINKS); left to resolve on its own, it would be a CUDA build of several GB.
# The rest goes through uv when it can be had (INSTALLER=pip to refuse it): about 3x faster here
# (docs/benchmarks.md, "First run"); pip is the fallback.
set -euo pipefail
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
EXTRAS=${EXTRAS:-all,dev,bench}  # the Docker image installs only "all"
INSTALLER=${INSTALLER:-auto}     # auto: uv if on PATH or installable, else pip
START=$SECONDS
step() { echo "[set-up $(($SECONDS - START))s] $*"; }

"$PYTHON" - <<'PY'
import sys
if sys.version_info[:2] != (3, 11):
    sys.exit(f"medcite needs Python 3.11, found {sys.version.split()[0]}; set PYTHON=python3.11")
PY

# A venv whose creation was interrupted has a python but no pip: make it again.
if [ -x "$VENV/bin/python" ] && ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    echo "$VENV is incomplete (no pip; its creation was interrupted?); creating it again"
    rm -rf "$VENV"
fi
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip install --quiet)
if [ "$INSTALLER" != pip ] && { command -v uv >/dev/null 2>&1 || [ -x "$VENV/bin/uv" ] \
    || "${PIP[@]}" "uv>=0.5" >/dev/null 2>&1; }; then
    UV=$(command -v uv || echo "$VENV/bin/uv")
    # uv reads neither pip.conf nor PIP_* settings: pass the local wheel folder on
    FIND_LINKS=()
    for dir in ${PIP_FIND_LINKS:-}; do FIND_LINKS+=(--find-links "$dir"); done
    INSTALL=("$UV" pip install --quiet --python "$VENV/bin/python" "${FIND_LINKS[@]}")
    step "installing with uv ($("$UV" --version))"
else
    "${PIP[@]}" --upgrade pip
    INSTALL=("${PIP[@]}")
    step "installing with pip"
fi
# uv is given the CPU wheel's file itself, so that it never picks the CUDA build of the registry
TORCH_WHEEL=""
for dir in ${PIP_FIND_LINKS:-}; do
    TORCH_WHEEL=${TORCH_WHEEL:-$(find "$dir" -maxdepth 1 -name 'torch-2.13.0+cpu-cp311-*.whl' 2>/dev/null | head -n 1)}
done
if "$VENV/bin/python" -c "from importlib.metadata import version as v; assert v('torch').split('+')[0] == '2.13.0'" 2>/dev/null; then
    step "torch 2.13.0 already installed"
elif [ "${INSTALL[0]}" != "${PIP[0]}" ] && [ -n "$TORCH_WHEEL" ]; then
    step "torch 2.13.0, CPU build, from $TORCH_WHEEL (about 10 s)"
    "${INSTALL[@]}" "$TORCH_WHEEL"
else
    step "torch 2.13.0, CPU build (about 30 s)"
    "${PIP[@]}" "torch==2.13.0"
fi

# llama-cpp-python (the local generator) ships only as source on the registry, and llama.cpp's
# default -march=native build enables AMX kernels that these virtual machines advertise but forbid
# (segfault on the first decode). Use a prebuilt wheel from ../shared/wheels when present (seconds),
# picked by CPU flags; otherwise build from source with explicit, AMX-free flags (8-9 minutes).
LLAMA_VERSION=0.3.36
if "$VENV/bin/python" - "$LLAMA_VERSION" <<'PY'
import sys
from importlib.metadata import PackageNotFoundError, version
try:
    sys.exit(0 if version("llama-cpp-python") == sys.argv[1] else 1)
except PackageNotFoundError:
    sys.exit(1)
PY
then
    echo "llama-cpp-python $LLAMA_VERSION already installed"
else
    REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    WHEELS="$(dirname "$REPO_ROOT")/shared/wheels"
    VARIANT=avx512
    for flag in avx512f avx512bw avx512vl avx512_vnni avx512_vbmi avx512_bf16; do
        grep -qw "$flag" /proc/cpuinfo || { VARIANT=avx2; break; }
    done
    WHEEL=""
    if [ -d "$WHEELS/$VARIANT" ]; then
        WHEEL=$(find "$WHEELS/$VARIANT" -maxdepth 1 -name "llama_cpp_python-$LLAMA_VERSION-*.whl" | head -n 1)
    fi
    if [ -n "$WHEEL" ]; then
        step "llama-cpp-python $LLAMA_VERSION from $WHEEL"
        "${INSTALL[@]}" "$WHEEL"
    else
        step "building llama-cpp-python $LLAMA_VERSION from source (about 10 minutes on 2 cores)"
        CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_BF16=OFF" \
            FORCE_CMAKE=1 "$VENV/bin/python" -m pip install --quiet --no-cache-dir \
            --no-binary llama-cpp-python "llama-cpp-python==$LLAMA_VERSION"  # a cached wheel may be a native build
    fi
fi
step "medcite with extras $EXTRAS"
"${INSTALL[@]}" -e ".[$EXTRAS]"

# The chat page's browser tests (tests/browser) drive Debian's chromium through playwright;
# `playwright install` cannot download its own browsers here. With the dev extra (not in the
# Docker image), root with apt-get installs it; elsewhere the browser tests skip and say how.
if [[ ",$EXTRAS," == *",dev,"* ]] && ! command -v chromium >/dev/null 2>&1 \
    && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    step "chromium (apt) for the browser tests (about 60 s)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null 2>&1 \
             && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1; } \
        || echo "could not install chromium; the browser tests will skip (apt-get install chromium)"
fi
step "medcite installed in $VENV (extras $EXTRAS)"
