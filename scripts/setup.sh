#!/usr/bin/env bash
# Installs everything Quiver needs to build, test and benchmark, from Debian
# packages and the npm registry only. Idempotent: installs only what is missing.
# Stops with a clear message naming the step that failed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

step() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }
fail() { printf '\033[31m[setup] FAILED:\033[0m %s\n' "$*" >&2; exit 1; }

# Debian packages, one per line: what they are for.
debian_packages=(
  build-essential cmake ninja-build pkg-config git  # toolchain
  clang libclang-rt-14-dev libfuzzer-14-dev          # sanitizers and libFuzzer
  clang-format clang-tidy                            # style checks
  googletest libgtest-dev libgmock-dev               # unit tests
  libbenchmark-dev                                   # benchmarks
  libflatbuffers-dev flatbuffers-compiler            # Arrow IPC metadata
  liblz4-dev libzstd-dev                             # IPC body compression
  nlohmann-json3-dev                                 # interop test data
  libtomlplusplus-dev                                # cluster config (TOML)
  libcli11-dev                                       # the quiver command line's options (CLI11)
  libprotobuf-dev protobuf-compiler                  # control protocol messages
  libssl-dev                                         # mutual TLS between nodes
  libucx-dev ucx-utils                               # the transport (UCX)
  libgrpc++-dev                                      # the transport benchmark's gRPC baseline
  iproute2 procps                                    # multi-process tests
  gnuplot-nox                                        # quiver bench plots
  g++-aarch64-linux-gnu g++-powerpc64le-linux-gnu    # compile the other flush paths
  python3-dev pybind11-dev python3-pybind11          # the quiver Python package
  python3-numpy python3-pandas python3-pytest        # ... its zero-copy views and tests
  python3-pip python3-setuptools python3-wheel       # ... pip install, offline
)

missing=()
for p in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if ((${#missing[@]})); then
  step "installing Debian packages: ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || fail "need root (or sudo) to apt-get install ${missing[*]}"
    SUDO="sudo"
  fi
  $SUDO apt-get update -qq || fail "apt-get update (is the Debian mirror reachable?)"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null || fail "apt-get install ${missing[*]}"
else
  step "Debian packages present"
fi

# Node.js runs the Apache Arrow JS peer. Use the machine's node if it has one.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  step "installing nodejs and npm from Debian"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null ||
    fail "apt-get install nodejs npm"
fi

# npm peers, versions pinned in package.json / package-lock.json.
lock="$here/package-lock.json"
stamp="$here/node_modules/.quiver-lock"
if [[ ! -f "$stamp" ]] || ! cmp -s "$lock" "$stamp"; then
  step "installing pinned npm packages (apache-arrow, @duckdb/node-bindings-linux-x64)"
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error) ||
    fail "npm ci (is the npm registry reachable?)"
  cp "$lock" "$stamp"
else
  step "npm packages present"
fi
# Polars (nodejs-polars, Rust) and its Linux x64 native module, pinned here
# rather than in package-lock.json: the package names native modules for
# other platforms that the registry may not carry, and npm ci then refuses
# the lock. --no-save leaves package.json and the lock as they are; npm ci
# above empties node_modules, so this runs again after it.
polars_version=0.26.1
polars_have="$(cd "$here" && node -p "require('nodejs-polars/package.json').version" 2>/dev/null || true)"
if [[ "$polars_have" != "$polars_version" ]] ||
  ! ls "$here"/node_modules/nodejs-polars-linux-x64-gnu/*.node >/dev/null 2>&1; then
  step "installing nodejs-polars $polars_version (Polars, the third Arrow peer)"
  (cd "$here" && npm install --no-save --no-package-lock --no-audit --no-fund \
    --loglevel=error "nodejs-polars@$polars_version" \
    "nodejs-polars-linux-x64-gnu@$polars_version") ||
    fail "npm install nodejs-polars@$polars_version (is the npm registry reachable?)"
fi
[[ -f "$here/node_modules/@duckdb/node-bindings-linux-x64/libduckdb.so" ]] ||
  fail "libduckdb.so missing from node_modules/@duckdb/node-bindings-linux-x64"
[[ -f "$here/node_modules/apache-arrow/package.json" ]] ||
  fail "apache-arrow missing from node_modules"
ls "$here"/node_modules/nodejs-polars-linux-x64-gnu/*.node >/dev/null 2>&1 ||
  fail "the Polars native module missing from node_modules/nodejs-polars-linux-x64-gnu"
step "done"
