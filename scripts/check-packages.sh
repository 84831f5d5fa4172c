#!/usr/bin/env bash
# Builds the DEB and TGZ from a configured, built tree and checks that they install and start:
#   scripts/check-packages.sh BUILD_DIR [MODEL.gguf]
# The DEB's dependencies are checked against this machine (dpkg --dry-run), it is unpacked into
# a scratch root, its desktop entry and AppStream metadata are validated, and the unpacked
# `fluoroscope` runs --version and (with MODEL) --screenshot under the offscreen platform.
set -euo pipefail
build=$(cd "${1:?usage: check-packages.sh BUILD_DIR [MODEL]}" && pwd)
model=${2:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/fluoro-packages.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "check-packages: $*" >&2; exit 1; }

(cd "$work" && cpack --config "$build/CPackConfig.cmake" -G "DEB;TGZ" -B "$work/out" >"$work/cpack.log" 2>&1) ||
    { tail -n 30 "$work/cpack.log" >&2; fail "cpack failed"; }
deb=$(ls "$work"/out/*.deb 2>/dev/null | head -n 1)
tgz=$(ls "$work"/out/*.tar.gz 2>/dev/null | head -n 1)
[ -n "$deb" ] || fail "no .deb produced"
[ -n "$tgz" ] || fail "no .tar.gz produced"
echo "packages: $(basename "$deb") $(basename "$tgz")"

# Metadata: name, and the Qt runtime found by dpkg-shlibdeps.
info=$(dpkg-deb --info "$deb")
grep -q '^ Package: fluoroscope$' <<<"$info" || fail "DEB package name is not fluoroscope"
grep -q '^ Depends:.*libqt6widgets6' <<<"$info" || fail "DEB does not depend on libqt6widgets6"
# Every dependency is satisfiable here (no install: dry run).
if [ "$(id -u)" = 0 ]; then
    dpkg --dry-run -i "$deb" >"$work/dry.log" 2>&1 || { cat "$work/dry.log" >&2; fail "dpkg --dry-run -i failed"; }
fi

root=$work/root
dpkg-deb -x "$deb" "$root"
app_id=io.fluoroscope.Fluoroscope
for f in usr/bin/fluoroscope usr/bin/fluoro usr/bin/fluoro_membw usr/share/applications/$app_id.desktop \
    usr/share/metainfo/$app_id.metainfo.xml usr/share/icons/hicolor/scalable/apps/$app_id.svg; do
    [ -e "$root/$f" ] || fail "DEB lacks $f"
done
if command -v desktop-file-validate >/dev/null; then
    desktop-file-validate "$root/usr/share/applications/$app_id.desktop" || fail "invalid desktop entry"
fi
if command -v appstreamcli >/dev/null; then
    appstreamcli validate --no-net "$root/usr/share/metainfo/$app_id.metainfo.xml" >"$work/as.log" 2>&1 ||
        { cat "$work/as.log" >&2; fail "invalid AppStream metadata"; }
fi
# Listed to a file first: `tar | grep -q` fails under pipefail when grep exits before tar is done.
tar -tzf "$tgz" >"$work/tgz.txt"
for f in bin/fluoroscope bin/fluoro bin/fluoro_membw; do
    grep -q "/$f\$" "$work/tgz.txt" || fail "TGZ lacks $f"
done

export QT_QPA_PLATFORM=offscreen
version=$("$root/usr/bin/fluoroscope" --version) || fail "unpacked fluoroscope --version failed"
grep -q "$(sed -n 's/^ Version: //p' <<<"$info")" <<<"$version" ||
    fail "fluoroscope --version says '$version', the DEB is $(sed -n 's/^ Version: //p' <<<"$info")"
"$root/usr/bin/fluoro" --version >/dev/null || fail "unpacked fluoro --version failed"
echo "started: $version"
if [ -n "$model" ]; then
    shot=$work/shot.png
    "$root/usr/bin/fluoroscope" --db "$work/sessions.db" --screenshot "$shot" "$model" >"$work/shot.log" 2>&1 ||
        { tail -n 20 "$work/shot.log" >&2; fail "unpacked fluoroscope --screenshot failed"; }
    [ "$(head -c 8 "$shot" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "screenshot is not a PNG"
    echo "screenshot: $(stat -c %s "$shot") bytes"
fi
echo "packages ok"
