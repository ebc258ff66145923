#!/usr/bin/env bash
# Put the JavaScript that renders widgets in the static book into _widget_js/widgets/
# (served as _static/widgets/),
# fetched from the npm registry at build time (never committed). myst-nb would
# otherwise load it from public CDNs, which fail offline and are unreliable for
# some readers. The versions are pinned here, and only here.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
HTML_MANAGER=1.0.15   # @jupyter-widgets/html-manager 1.x renders ipywidgets 8 state
REQUIREJS=2.3.8
out=_widget_js/widgets
stamp="$out/.versions"
want="html-manager@$HTML_MANAGER requirejs@$REQUIREJS"
if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && [ -s "$out/embed-amd.js" ] && [ -s "$out/require.js" ]; then
  exit 0
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "@jupyter-widgets/html-manager@$HTML_MANAGER" "requirejs@$REQUIREJS" >/dev/null)
tar -xzf "$tmp/jupyter-widgets-html-manager-$HTML_MANAGER.tgz" -C "$tmp" package/dist/embed-amd.js
mv "$tmp/package/dist/embed-amd.js" "$tmp/embed-amd.js"
tar -xzf "$tmp/requirejs-$REQUIREJS.tgz" -C "$tmp" package/require.js
mkdir -p "$out"
mv "$tmp/embed-amd.js" "$tmp/package/require.js" "$out/"
echo "$want" > "$stamp"
echo "widget JavaScript ready in $out ($want)"
