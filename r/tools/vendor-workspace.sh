#!/bin/sh
# Copies the fdp workspace's Rust sources this package builds on (the root manifest and lock, the
# facade src/, every crate but the Python and command-line front doors) into src/fdp-workspace, so
# that the package -- and the source tarball `R CMD build` makes of it -- carries the one Rust core
# it is built from. Run by ./configure when the package sits in the repository (r/); a tarball
# already carries the copy. FDP_WORKSPACE names another checkout of the workspace.
set -eu
pkg=$(cd "$(dirname "$0")/.." && pwd)
root=${FDP_WORKSPACE:-$pkg/..}
dest="$pkg/src/fdp-workspace"
if [ ! -f "$root/Cargo.toml" ] || ! grep -q '^name = "fdp"$' "$root/Cargo.toml"; then
  echo "vendor-workspace: $root is not the fdp workspace (set FDP_WORKSPACE)" >&2
  exit 1
fi
# Keep an unchanged root manifest's time stamp (cargo would rebuild everything for a new one).
manifest=$(mktemp)
[ -f "$dest/Cargo.toml" ] && cp -p "$dest/Cargo.toml" "$manifest"
rm -rf "$dest"
mkdir -p "$dest/crates"
cp -p "$root/Cargo.lock" "$root/README.md" "$dest/"
cp -pR "$root/src" "$dest/src"
for crate in "$root"/crates/*; do
  name=$(basename "$crate")
  case "$name" in
    fdp-python | fdp-cli) ;;
    *)
      mkdir -p "$dest/crates/$name"
      cp -p "$crate/Cargo.toml" "$dest/crates/$name/"
      cp -pR "$crate/src" "$dest/crates/$name/src"
      ;;
  esac
done
# The root manifest without its example, bench and test targets (their files stay in the repository).
awk '
  /^\[\[(example|bench|test)\]\]/ { skip = 1; next }
  /^\[/ { skip = 0 }
  !skip { print }
' "$root/Cargo.toml" > "$dest/Cargo.toml"
echo "vendor-workspace: copied the fdp workspace from $root into src/fdp-workspace"
