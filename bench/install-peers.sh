#!/usr/bin/env bash
# Create one virtual environment per heavy peer of `python -m bench`.
#
#   bash bench/install-peers.sh [PEERS_DIR]
#
# PEERS_DIR defaults to $PHISPARSE_BENCH_PEERS_DIR, else the folder `peers`
# beside this checkout, which is where the harness looks by default.  Each venv
# gets the numpy and scipy versions of the python that runs phisparse ($PYTHON,
# default: python3), so every peer starts from the same numpy; where a peer's
# wheel refuses them, it gets the ones pip picks and the script says so.
# pydata `sparse` must live in its own venv: installed beside phisparse it
# replaces our `sparse` package.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-${PHISPARSE_BENCH_PEERS_DIR:-$root/../peers}}
py=${PYTHON:-python3}
pins=$("$py" -c 'import numpy, scipy; print(f"numpy=={numpy.__version__} scipy=={scipy.__version__}")')
mkdir -p "$dir"

make_venv() {  # make_venv NAME PACKAGE...
    local venv="$dir/$1"; shift
    "$py" -m venv "$venv"
    # shellcheck disable=SC2086  # $pins is two words on purpose
    if ! "$venv/bin/pip" install -q $pins "$@"; then
        echo "install-peers: $* does not install with $pins; letting pip choose" >&2
        "$venv/bin/pip" install -q "$@"
    fi
    echo "install-peers: $venv ready ($*)"
}

make_venv venv-torch torch==2.13.0   # the CPU build: point pip at a CPU wheel if yours picks CUDA
make_venv venv-paddle paddlepaddle
make_venv venv-tf tensorflow-cpu
make_venv venv-pydata sparse
