# Sourced by setup.sh and light_job.sh: install a requirements file into a
# virtual environment once. A stamp of the file's SHA-256, kept in the
# environment, makes a second run only check (CI calls setup every time).

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
