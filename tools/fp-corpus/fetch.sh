#!/usr/bin/env bash
# Fetch the false-positive corpus for the secret scanner: pinned, well-known packages from
# crates.io, PyPI and npm (listed in manifest.tsv next to this script) that hold no real
# secrets. Each archive is downloaded from the registry's published URL, its sha256 checked
# against the manifest, and unpacked to $ENGRAM_FP_CORPUS/src/<name>-<version>.
#
#   tools/fp-corpus/fetch.sh                       # into target/fp-corpus
#   ENGRAM_FP_CORPUS=/some/dir tools/fp-corpus/fetch.sh
#   ENGRAM_FP_MANIFEST=tools/fp-corpus/held-out.tsv ENGRAM_FP_CORPUS=target/fp-held-out \
#       tools/fp-corpus/fetch.sh                   # the held-out corpus (see held-out.tsv)
#   cargo bench --no-default-features --features patterns --bench secrets_fp
#
# Any pinned-package manifest with these first five tab-separated columns works (name,
# registry, version, url, sha256; further columns are ignored here):
# tools/search-eval/fetch.sh runs this script on the search eval's manifest.
#
# Re-running is cheap: archives already present with the right digest are not downloaded
# again, and packages already unpacked are left alone.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
manifest="${ENGRAM_FP_MANIFEST:-$here/manifest.tsv}"
cache="${ENGRAM_FP_CORPUS:-$root/target/fp-corpus}"

for tool in curl sha256sum tar; do
    command -v "$tool" >/dev/null || { echo "fetch.sh: $tool is needed" >&2; exit 1; }
done

mkdir -p "$cache/archives" "$cache/src"

digest() { sha256sum "$1" | cut -c1-64; }

failed=0
while IFS=$'\t' read -r name registry version url sha _rest; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    archive="$cache/archives/${url##*/}"
    dest="$cache/src/$name-$version"

    if [[ ! -f "$archive" || "$(digest "$archive")" != "$sha" ]]; then
        echo "fetch $name $version ($registry)"
        curl --fail --silent --show-error --location --retry 3 -o "$archive.part" "$url"
        got="$(digest "$archive.part")"
        if [[ "$got" != "$sha" ]]; then
            # A changed digest means the corpus is no longer what the numbers were measured
            # on (or the download was tampered with): never scan it.
            echo "fetch.sh: SHA256 MISMATCH for $name $version" >&2
            echo "  url:      $url" >&2
            echo "  expected: $sha" >&2
            echo "  got:      $got" >&2
            rm -f "$archive.part"
            failed=1
            continue
        fi
        mv "$archive.part" "$archive"
        rm -rf "$dest"
    fi

    # The .complete marker tells a finished unpack from one cut short.
    if [[ ! -f "$dest/.complete" ]]; then
        rm -rf "$dest" "$dest.tmp"
        mkdir -p "$dest.tmp"
        # All three registries publish gzip'd tarballs (.crate, sdist .tar.gz, npm .tgz).
        tar -xzf "$archive" -C "$dest.tmp" --no-same-owner
        mv "$dest.tmp" "$dest"
        touch "$dest/.complete"
    fi
done <"$manifest"

if [[ $failed -ne 0 ]]; then
    echo "fetch.sh: some archives did not match their sha256; see above" >&2
    exit 1
fi
echo "corpus ready in $cache/src"
