"""JupyterHub's configuration for the course's local hub (``make hub``).

``python -m jaxcourse.hub start`` runs ``jupyterhub -f`` on this file and
says everything through the environment: the state folder, the ports, the
class's users and their password. One machine, one person: every user's
server runs as whoever started the hub (SimpleLocalProcessSpawner), with a
home of its own under the state folder. That is a classroom rehearsal, never
a hub for real students (book/for_teachers.md says what a university's hub
uses instead).
"""

import os
from pathlib import Path

c = get_config()  # noqa: F821 (JupyterHub defines it when it reads this file)

state = Path(os.environ["JAX_COURSE_HUB_DIR"])
teacher = os.environ["JAX_COURSE_HUB_TEACHER"]
students = os.environ["JAX_COURSE_HUB_STUDENTS"].split()

# Only this machine reaches the hub, the proxy's API and the hub's own port.
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = int(os.environ["JAX_COURSE_HUB_PORT"])
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(os.environ["JAX_COURSE_HUB_API_PORT"])
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{os.environ['JAX_COURSE_HUB_PROXY_PORT']}"
c.ConfigurableHTTPProxy.command = [os.environ["JAX_COURSE_HUB_PROXY"]]
c.ConfigurableHTTPProxy.pid_file = str(state / "proxy.pid")

# Everything the hub writes stays in the state folder, never in the clone.
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "cookie_secret")
c.JupyterHub.pid_file = str(state / "jupyterhub.pid")

# No PAM, no system accounts: the class's names, one shared password.
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = os.environ["JAX_COURSE_HUB_PASSWORD"]
c.Authenticator.allowed_users = {teacher, *students}
c.Authenticator.admin_users = {teacher}

c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = str(state / "homes" / "{username}")
c.Spawner.cmd = [os.environ["JAX_COURSE_HUB_SINGLEUSER"]]
c.Spawner.default_url = "/lab"
# The course's variables reach every server and kernel: where the hub's
# course folder is, the data folder, and the tag that lets `make hub-stop`
# find every process the hub started, wherever it was reparented.
c.Spawner.env_keep.extend(sorted(
    name for name in os.environ
    if name.startswith(("JAX_COURSE_", "JAXCOURSE_", "TF_CPP_"))
    and "PASSWORD" not in name))
# A loaded two-core machine starts a server in seconds, not always in 30.
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
if os.geteuid() == 0:
    c.Spawner.args = ["--allow-root"]  # CI runs as root
