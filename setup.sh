#!/usr/bin/env bash
# rankmap: set up everything on a Debian 12 machine (as root), then run a task.
#
#   bash setup.sh            install only
#   bash setup.sh demo       install, then run the main job on the embedded default
#   bash setup.sh test       install, then run the whole test suite (what .ci/run calls)
#
# Idempotent: apt packages and the venv are only installed when missing, the C
# libraries are rebuilt by pip. Everything lands in ./.venv.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$PWD
VENV=$ROOT/.venv

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config gfortran binutils
  python3 python3-venv python3-dev
  openmpi-bin libopenmpi-dev mpich libmpich-dev
  hwloc libhwloc-dev
  slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge libpmix2
  scotch libscotch-dev libptscotch-dev libmetis5
  simgrid libsimgrid-dev
)

log() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

install_apt() {
  local missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    log "apt-get install ${missing[*]}"
    if [ "$(id -u)" -ne 0 ]; then
      echo "setup.sh: these Debian packages are missing and installing them needs root: ${missing[*]}" >&2
      exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
}

install_python() {
  # Debian's own interpreter: the README's commands must not depend on a pyenv or conda
  if [ ! -x "$VENV/bin/python" ]; then
    log "creating $VENV"
    /usr/bin/python3 -m venv "$VENV"
  fi
  "$VENV/bin/python" -m pip install -q --upgrade pip
  log "building and installing rankmap (C libraries against $(command -v mpicc))"
  # the bench extra holds the competitors (SharedMap, KaHIP) the tests compare against
  "$VENV/bin/python" -m pip install -q "$ROOT[test,bench]"
}

install_apt
install_python

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
case "${1:-}" in
  "") log "installed: $VENV/bin/rankmap" ;;
  demo) shift; exec "$VENV/bin/rankmap" demo "$@" ;;
  test)
    shift
    # RANKMAP_REQUIRE_ALL: a test skipped for a missing component fails the run instead
    export RANKMAP_REQUIRE_ALL=1
    cd "$ROOT"
    exec "$VENV/bin/python" -m pytest tests "$@"
    ;;
  *) echo "usage: bash setup.sh [demo|test]" >&2; exit 2 ;;
esac
