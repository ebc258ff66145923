# Sourced by setup.sh, light_job.sh and cluster.sh.
#
# install_pins installs a requirements file into a virtual environment once: a
# stamp of the file's SHA-256, kept in the environment, makes a second run only
# check (CI calls setup every time). missing_debs and install_debs do the same
# for Debian packages.

# install_pins VENV REQUIREMENTS WHAT
install_pins() {
  local venv="$1" requirements="$2" what="$3" stamp want
  stamp="$venv/.jaxcourse-$(basename "$requirements" .txt).sha256"
  want="$(sha256sum "$requirements" | cut -d' ' -f1)"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "installing $what into $venv …"
    "$venv/bin/python" -m pip install --quiet -r "$requirements"
    echo "$want" > "$stamp"
  else
    echo "$what: already installed"
  fi
}

# missing_debs PKG...: print those of the Debian packages PKG... that are not
# installed, one per line.
missing_debs() {
  local pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
      || printf '%s\n' "$pkg"
  done
}

# install_debs PKG...: install Debian packages with apt-get, as root or with
# sudo. Where it cannot (no apt-get; neither root nor sudo; sudo would ask
# for a password with nobody at a terminal to type it), it prints why in a
# few words and returns 1, without waiting for anything.
install_debs() {
  local sudo=""
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "there is no apt-get here"; return 1
  fi
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "installing needs root or sudo"; return 1
    fi
    if [ ! -t 0 ] && ! sudo -n true 2>/dev/null; then
      echo "installing needs root or sudo without a password"; return 1
    fi
    sudo="sudo"
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "$@" >/dev/null
}
