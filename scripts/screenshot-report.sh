#!/usr/bin/env bash
# Renders a cloudinfer HTML report in headless Chromium and saves a PNG
# screenshot, to check the report the way a browser draws it.
#
#   scripts/screenshot-report.sh REPORT.html [OUT.png] [WIDTHxHEIGHT]
#
# Installs Debian's chromium when it is missing (needs root and apt). The
# browser is kept offline: no network services, no first-run, no sync, a
# throw-away profile.
set -euo pipefail

html=${1:?usage: $0 REPORT.html [OUT.png] [WIDTHxHEIGHT]}
png=${2:-${html%.html}.png}
size=${3:-1280x2000}

browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
done
if [[ -z $browser ]]; then
  echo "installing chromium…" >&2
  if [[ $(id -u) -ne 0 ]]; then
    echo "chromium is missing; install it (apt-get install -y chromium) or run as root" >&2
    exit 1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  browser=chromium
fi

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
abs=$(cd "$(dirname "$html")" && pwd)/$(basename "$html")
case $png in /*) out=$png ;; *) out=$PWD/$png ;; esac

timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --disable-dev-shm-usage --hide-scrollbars \
  --user-data-dir="$profile" --screenshot="$out" --window-size="${size/x/,}" \
  "file://$abs" >/dev/null 2>&1

test -s "$out"
echo "$out"
