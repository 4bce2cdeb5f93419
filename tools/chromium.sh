#!/usr/bin/env bash
# The Chromium of the browser test (tests/test_browser.py), pinned: the headless build that the
# npm package @sparticuz/chromium ships inside its tarball (no download of its own), checked
# against the tarball's sha512 below, with the shared libraries it needs (NSS, expat) and its
# fonts; unpacked into .chromium/ (ignored by git). A Debian package cannot be pinned this way:
# Debian replaces its Chromium with each security update (156.0.8078.73 -> .108 in November
# 2026), and the old one leaves the mirror.
#   tools/chromium.sh [DEST]   (default .chromium; a no-op when DEST already holds this build)
# The fonts: the package's Open Sans, and matplotlib's DejaVu family (pinned in the lock), so
# that pages lay out alike on every machine, whatever fonts it has.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=153.0.0
INTEGRITY=sha512-jiGWqSvPMdu4+P9TilYqAR7yEGPEHINx+lCvE/NqNO/EHYzF/x1hUiI5T6ioVIt7dEy7n88byyT0vk+dnsgQwA==
dest=${1:-.chromium}
if [ -x "$dest/chromium" ] && [ "$(cat "$dest/.integrity" 2>/dev/null)" = "$INTEGRITY" ]; then
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "@sparticuz/chromium@$VERSION" >/dev/null)
tgz=$(ls "$tmp"/*.tgz)
got=$(node -e 'const c = require("crypto"), fs = require("fs");
console.log("sha512-" + c.createHash("sha512").update(fs.readFileSync(process.argv[1])).digest("base64"))' "$tgz")
if [ "$got" != "$INTEGRITY" ]; then
  echo "tools/chromium.sh: @sparticuz/chromium@$VERSION has sha512 $got, not the pinned" \
       "$INTEGRITY" >&2
  exit 1
fi
tar xzf "$tgz" -C "$tmp"
rm -rf "$dest" && mkdir -p "$dest/lib" "$dest/fonts"
node -e '
const z = require("zlib"), fs = require("fs"), [src, out] = process.argv.slice(1);
for (const name of ["chromium", "al2023.tar", "swiftshader.tar", "fonts.tar"])
  fs.writeFileSync(out + "/" + name, z.brotliDecompressSync(fs.readFileSync(src + "/" + name + ".br")));
' "$tmp/package/bin" "$tmp"
install -m 755 "$tmp/chromium" "$dest/chromium"
tar xf "$tmp/al2023.tar" -C "$tmp" && cp -r "$tmp"/lib/. "$dest/lib/"
tar xf "$tmp/swiftshader.tar" -C "$dest/lib"
tar xf "$tmp/fonts.tar" -C "$tmp" && cp -r "$tmp"/fonts/. "$dest/fonts/"
mpl=$("${PYTHON:-.venv/bin/python}" -c 'import matplotlib, os; print(os.path.join(matplotlib.get_data_path(), "fonts", "ttf"))' 2>/dev/null || true)
{
  echo '<?xml version="1.0"?>'
  echo '<!DOCTYPE fontconfig SYSTEM "fonts.dtd">'
  echo '<fontconfig>'
  echo "  <dir>$(cd "$dest" && pwd)/fonts</dir>"
  [ -n "$mpl" ] && echo "  <dir>$mpl</dir>"
  echo "  <cachedir>$(cd "$dest" && pwd)/fonts-cache</cachedir>"
  echo '</fontconfig>'
} > "$dest/fonts.conf"
echo "$INTEGRITY" > "$dest/.integrity"
"$dest/chromium" --version
