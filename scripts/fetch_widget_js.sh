#!/usr/bin/env bash
# Put the JavaScript the static book needs into _widget_js/ (served as _static/),
# fetched from the npm registry at build time (never committed). Sphinx and
# myst-nb would otherwise load it from public CDNs, which fail offline and are
# unreliable for some readers. The versions are pinned here, and only here.
#   _widget_js/widgets/   requirejs and @jupyter-widgets/html-manager (renders
#                         the stored widget state), plus the icon fonts the
#                         widget bundle loads next to itself (widgets/fonts/),
#                         and widgets/setup.js, written below
#   _widget_js/mathjax/   MathJax 3 (only its es5/ build), see mathjax_path
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
HTML_MANAGER=1.0.15   # @jupyter-widgets/html-manager 1.x renders ipywidgets 8 state
REQUIREJS=2.3.8
MATHJAX=3.2.2
out=_widget_js/widgets
mj=_widget_js/mathjax
stamp=_widget_js/.versions
want="html-manager@$HTML_MANAGER requirejs@$REQUIREJS mathjax@$MATHJAX"
if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && [ -s "$out/embed-amd.js" ] \
   && [ -s "$out/require.js" ] && [ -s "$out/setup.js" ] && [ -s "$mj/es5/tex-mml-chtml.js" ] \
   && compgen -G "$out/fonts/*.woff2" >/dev/null; then
  exit 0
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "@jupyter-widgets/html-manager@$HTML_MANAGER" \
  "requirejs@$REQUIREJS" "mathjax@$MATHJAX" >/dev/null)
rm -rf "$out" "$mj"
mkdir -p "$out/fonts" "$mj"
# The widget bundle, and the fonts it asks for relative to its own module URL
# (webpack's public path); _config.yml maps that module URL to widgets/fonts/.
tar -xzf "$tmp/jupyter-widgets-html-manager-$HTML_MANAGER.tgz" -C "$tmp" package/dist
mv "$tmp/package/dist/embed-amd.js" "$out/"
find "$tmp/package/dist" -maxdepth 1 -type f \
  \( -name '*.woff2' -o -name '*.woff' -o -name '*.ttf' -o -name '*.eot' -o -name '*.svg' \) \
  -exec mv {} "$out/fonts/" \;
rm -rf "$tmp/package"
tar -xzf "$tmp/requirejs-$REQUIREJS.tgz" -C "$tmp" package/require.js
mv "$tmp/package/require.js" "$out/"
rm -rf "$tmp/package"
tar -xzf "$tmp/mathjax-$MATHJAX.tgz" -C "$tmp" package/es5
mv "$tmp/package/es5" "$mj/"
# widgets/setup.js runs before requirejs and the widget bundle (see
# nb_ipywidgets_js in _config.yml). Its two fixes:
# - requirejs reads the `require` object when it starts. The widget bundle loads
#   its icon fonts relative to its own module URL (webpack's public path),
#   which requirejs would otherwise place relative to each page (404s); map the
#   modules' folders to widgets/fonts/.
# - ipywidgets typesets labels with MathJax 2's MathJax.Hub.Queue, which
#   MathJax 3 lacks (TypeError on pages with math and widgets); forward it.
cat > "$out/setup.js" <<'JS'
// Written by scripts/fetch_widget_js.sh.
var require = (function () {
  var fonts = new URL("fonts", document.currentScript.src).href;
  return {paths: {"@jupyter-widgets": fonts,
                  "@jupyter-widgets/html-manager/dist": fonts}};
})();
document.addEventListener("DOMContentLoaded", function () {
  var mj = window.MathJax;
  if (mj && !mj.Hub) {
    mj.Hub = {Queue: function (args) {
      var ready = mj.startup && mj.startup.promise;
      if (ready) {
        ready.then(function () { return mj.typesetPromise([args[2]]); });
      }
    }};
  }
});
JS
echo "$want" > "$stamp"
echo "book JavaScript ready in _widget_js/ ($want)"
