#!/bin/sh
# Vendors the crates.io dependencies of src/rust into src/rust/vendor.tar.xz (CRAN's offline build):
# configure unpacks it and cargo builds with --offline. Run after tools/vendor-workspace.sh.
set -eu
pkg=$(cd "$(dirname "$0")/.." && pwd)
cd "$pkg/src/rust"
rm -rf vendor vendor.tar.xz
cargo vendor --locked --versioned-dirs vendor > /dev/null
# Keep the tarball small: the crates' own tests, benches and examples are not built.
find vendor -mindepth 2 -maxdepth 2 -type d \( -name tests -o -name benches -o -name examples \) -prune -exec rm -rf {} +
for checksum in vendor/*/.cargo-checksum.json; do
  printf '{"files":{},"package":%s}\n' "$(sed -n 's/.*"package":\("[0-9a-f]*"\).*/\1/p' "$checksum")" > "$checksum"
done
tar -cJf vendor.tar.xz vendor
rm -rf vendor
echo "vendor-crates: wrote src/rust/vendor.tar.xz ($(du -h vendor.tar.xz | cut -f1))"
