"""The Dockerfile's two images, built and measured: `web` (no encoder) and `worker` (torch CPU
build, then the `encoder` extra).

Builds both targets with `docker build --network host --target web|worker`, then prints each
image's size (`docker image inspect --format '{{.Size}}'`, MB = 10^6 bytes as `docker images`
shows them), the base image's size (the Dockerfile's first FROM), what each image adds over the
base, the size of the Python site directories inside each container (`du -sm`, MiB, as the
README's install figures), the build context copied into /app, whether torch imports in web (it
must not) and which torch build worker has, any nvidia-*/triton package (there must be none),
and each build's wall time. `--smoke` also runs `manage.py check --deploy` in web and counts
the static files collected at build time, then serves web as docker-compose does (`migrate`, then
gunicorn, on a free 127.0.0.1 port with `--network host`, a SQLite file under /data, DEBUG off)
and fetches the login page and the stylesheet it links (200, text/css), and in worker loads the
packaged model and encodes a sentence with no network. A failed smoke check exits nonzero.

    python3 benchmarks/image_sizes.py [--torch-index-url URL] [--no-cache] [--context DIR]
                                      [--smoke] [--log-dir DIR]

Where download.pytorch.org is out of reach, pass a mirror of its CPU index (it must serve
torch's dependencies too), e.g. `--torch-index-url http://127.0.0.1:8765/simple`.
"""

from __future__ import annotations

import argparse
import json
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGETS = ("web", "worker")
# Site directories and the build context's copy, measured inside a container.
MEASURE = r"""
import json, os, site, subprocess
def mib(path):
    out = subprocess.run(["du", "-sm", path], capture_output=True, text=True).stdout
    return int(out.split()[0]) if out else None
dirs = {p: mib(p) for p in site.getsitepackages() if os.path.isdir(p)}
app = {p: mib(p) for p in ("/app", "/app/.venv", "/app/.git") if os.path.isdir(p)}
print(json.dumps({"site": dirs, "app": app}))
"""
TORCH = "import torch; print(torch.__version__, 'cuda', torch.version.cuda)"
ENCODE = (
    "from corpus.embedding import Encoder, default_model_path; e = Encoder(); "
    "v = e.encode(['a sentence to encode']); "
    "print(default_model_path(), e.info.name, e.info.dimension, v.shape, v.dtype)"
)


def docker(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(["docker", *args], capture_output=True, text=True)
    if check and result.returncode != 0:
        sys.exit(f"docker {' '.join(args[:2])} failed: {result.stderr.strip()}")
    return result


def need_docker() -> None:
    if shutil.which("docker") is None:
        sys.exit("The docker client is not installed (no `docker` on PATH); nothing was built.")
    version = docker("version", "--format", "{{.Server.Version}}", check=False)
    if version.returncode != 0:
        reason = (version.stderr.strip().splitlines() or ["no answer"])[-1]
        sys.exit(f"No Docker daemon answers, so nothing was built: {reason}")
    print(f"Docker server {version.stdout.strip()}")


def base_image(dockerfile: Path) -> str:
    for line in dockerfile.read_text().splitlines():
        if line.strip().upper().startswith("FROM "):
            return line.split()[1]
    sys.exit(f"{dockerfile} has no FROM line.")


def image_bytes(image: str) -> int | None:
    result = docker("image", "inspect", "--format", "{{.Size}}", image, check=False)
    return int(result.stdout) if result.returncode == 0 else None


def mb(size: int) -> str:
    return f"{size / 1e6:,.1f} MB ({size / 2**20:,.1f} MiB)"


def build(target: str, tag: str, args: argparse.Namespace, log_dir: Path) -> float:
    command = ["build", "--force-rm", "--network", "host", "--target", target, "-t", tag]
    command += ["-f", str(args.dockerfile)]
    if args.torch_index_url:
        command += ["--build-arg", f"TORCH_INDEX_URL={args.torch_index_url}"]
    if args.no_cache:
        command.append("--no-cache")
    command.append(str(args.context))
    log = log_dir / f"image_sizes-{target}.log"
    started = time.perf_counter()
    with log.open("w") as out:
        done = subprocess.run(["docker", *command], stdout=out, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-25:])
        sys.exit(f"Building {target} failed after {seconds:.0f} s (log: {log}):\n{tail}")
    print(f"built {tag} (--target {target}) in {seconds:.1f} s; log: {log}")
    return seconds


def run(
    image: str, *command: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    flags = ["run", "--rm", "--network", "none"]
    for name, value in (env or {}).items():
        flags += ["-e", f"{name}={value}"]
    return docker(*flags, image, *command, check=False)


def packages(image: str) -> dict[str, str]:
    listed = run(image, "python", "-m", "pip", "list", "--format", "json")
    if listed.returncode != 0:
        return {}
    return {p["name"].lower(): p["version"] for p in json.loads(listed.stdout)}


def measure(image: str) -> dict:
    result = run(image, "python", "-c", MEASURE)
    if result.returncode != 0:
        sys.exit(f"Measuring inside {image} failed: {result.stderr.strip()}")
    return json.loads(result.stdout)


def show(label: str, result: subprocess.CompletedProcess) -> bool:
    state = "ok" if result.returncode == 0 else f"FAILED (exit {result.returncode})"
    print(f"  {label}: {state}")
    for line in (result.stdout + result.stderr).strip().splitlines()[-6:]:
        print(f"    {line}")
    return result.returncode == 0


class Stylesheets(HTMLParser):
    """The href of each `<link rel="stylesheet">` in a page."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "link" and "stylesheet" in (found.get("rel") or "").split() and found.get("href"):
            self.found.append(found["href"])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def fetch(url: str) -> tuple[int, str, bytes]:
    """Status, Content-Type and body; an HTTP error status is an answer, not an exception."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 - our own URL
            return response.status, response.headers.get("Content-Type", ""), response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), error.read()


def serve_web(web: str, env: dict[str, str], wait: float = 60.0) -> bool:
    """Web as docker-compose runs it (migrate, then gunicorn); the login page and its CSS."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    steps = (
        "python manage.py migrate --noinput -v0 && "
        f"exec gunicorn goldset.wsgi --bind 127.0.0.1:{port} --workers 2"
    )
    # Not --rm: a container that exits early keeps its log until the `finally` below.
    flags = ["run", "-d", "--network", "host"]
    for name, value in env.items():
        flags += ["-e", f"{name}={value}"]
    started = docker(*flags, web, "sh", "-c", steps, check=False)
    label = f"{web}: migrate, then gunicorn on 127.0.0.1:{port} (as docker-compose's web)"
    if started.returncode != 0:
        print(f"  {label}: FAILED to start: {started.stderr.strip()}")
        return False
    container = started.stdout.strip()
    try:
        login, exited, deadline = None, "", time.monotonic() + wait
        while login is None and not exited and time.monotonic() < deadline:
            try:
                login = fetch(f"{base}/accounts/login/")
            except OSError:  # not listening yet
                state = docker(
                    "inspect",
                    "--format",
                    "{{.State.Status}}, exit code {{.State.ExitCode}}",
                    container,
                    check=False,
                ).stdout.strip()
                if not state.startswith("running"):
                    exited = f"the container stopped ({state or 'gone'})"
                time.sleep(0.5)
        if login is None:
            why = exited or f"nothing answered within {wait:.0f} s"
            logs = docker("logs", "--tail", "15", container, check=False)
            print(f"  {label}: FAILED, {why}; container log:")
            for line in (logs.stdout + logs.stderr).strip().splitlines():
                print(f"    {line}")
            return False
        print(f"  {label}: ok")
        status, kind, body = login
        print(f"    GET /accounts/login/: {status} {kind}, {len(body):,} bytes")
        if status != 200:
            print(f"  login page: FAILED (HTTP {status}, expected 200)")
            return False
        parser = Stylesheets()
        parser.feed(body.decode("utf-8", "replace"))
        if not parser.found:
            print("  login page: FAILED, it links no stylesheet to fetch")
            return False
        href = parser.found[0]
        status, kind, body = fetch(urllib.parse.urljoin(f"{base}/accounts/login/", href))
        print(f"    GET {href}: {status} {kind}, {len(body):,} bytes")
        if status != 200 or not kind.startswith("text/css"):
            print(f"  static file: FAILED (expected 200 text/css, got {status} {kind or '-'})")
            return False
        print("  login page 200, its stylesheet 200 text/css (served by WhiteNoise): ok")
        return True
    finally:
        docker("rm", "--force", container, check=False)


def smoke(web: str, worker: str) -> bool:
    print("smoke checks (web on the host's loopback, the rest with no network):")
    env = {
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "goldset.example.org",
        "DATABASE_URL": "sqlite:////data/goldset-smoke.sqlite3",
    }
    ok = show(
        f"{web}: manage.py check --deploy",
        run(web, "python", "manage.py", "check", "--deploy", env=env),
    )
    count = "find /app/staticfiles -type f | wc -l; ls /app/staticfiles"
    ok &= show(f"{web}: static files collected at build time", run(web, "sh", "-c", count))
    served = {
        **env,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DEBUG": "0",
        "SECURE_SSL_REDIRECT": "0",
    }
    ok &= serve_web(web, served)
    ok &= show(
        f"{worker}: packaged model loaded, one sentence encoded",
        run(worker, "python", "-c", ENCODE),
    )
    onnx = "import onnxruntime; print('onnxruntime', onnxruntime.__version__)"
    ok &= show(f"{worker}: onnxruntime imports", run(worker, "python", "-c", onnx))
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch-index-url", help="TORCH_INDEX_URL build arg (a mirror)")
    parser.add_argument("--no-cache", action="store_true", help="build every layer again")
    parser.add_argument("--context", type=Path, default=REPO, help="build context (the repo)")
    parser.add_argument("--dockerfile", type=Path, default=REPO / "Dockerfile")
    parser.add_argument("--tag-prefix", default="goldset", help="images are PREFIX-web, -worker")
    parser.add_argument("--log-dir", type=Path, default=REPO / "benchmarks" / "out")
    parser.add_argument("--smoke", action="store_true", help="also start web and worker")
    args = parser.parse_args()
    need_docker()
    args.log_dir.mkdir(parents=True, exist_ok=True)
    base = base_image(args.dockerfile)
    if image_bytes(base) is None:
        print(f"note: the base image {base} is not present locally; docker build will pull it")
    tags = {target: f"{args.tag_prefix}-{target}" for target in TARGETS}
    seconds = {target: build(target, tags[target], args, args.log_dir) for target in TARGETS}

    base_size = image_bytes(base)
    sizes = {target: image_bytes(tag) for target, tag in tags.items()}
    print()
    print(f"base {base}: {mb(base_size)}")
    for target, tag in tags.items():
        print(f"{tag}: {mb(sizes[target])}, adds {mb(sizes[target] - base_size)} over the base")
    print(f"worker adds {mb(sizes['worker'] - sizes['web'])} over web")
    print(f"build wall time: web {seconds['web']:.1f} s, worker {seconds['worker']:.1f} s", end="")
    print(" (worker's build reuses web's layers)" + (", --no-cache" if args.no_cache else ""))

    print()
    for label, image in (("base", base), *tags.items()):
        found = measure(image)
        site = ", ".join(f"{path} {size} MiB" for path, size in found["site"].items())
        total = sum(size for size in found["site"].values())
        print(f"{label} site directories: {total} MiB ({site})")
        if found["app"]:
            print(f"{label} /app: " + ", ".join(f"{p} {s} MiB" for p, s in found["app"].items()))

    print()
    web_torch = run(tags["web"], "python", "-c", "import torch")
    if web_torch.returncode == 0:
        print(f"{tags['web']}: torch IMPORTS (it must not)")
    else:
        error = (web_torch.stderr.strip().splitlines() or ["?"])[-1]
        print(f"{tags['web']}: no torch ({error})")
    worker_torch = run(tags["worker"], "python", "-c", TORCH)
    print(f"{tags['worker']}: torch {(worker_torch.stdout or worker_torch.stderr).strip()}")
    for tag in tags.values():
        installed = packages(tag)
        gpu = sorted(n for n in installed if n.startswith(("nvidia-", "triton")))
        print(f"{tag}: {len(installed)} packages (pip list), nvidia-*/triton: {gpu or 'none'}")
        if "torch" in installed:
            print(f"{tag}: pip list has torch {installed['torch']}")
    problems = web_torch.returncode == 0 or "+cpu" not in worker_torch.stdout
    smoked = True
    if args.smoke:
        print()
        smoked = smoke(tags["web"], tags["worker"])
    if problems:
        sys.exit("web must not have torch and worker must have torch's +cpu build.")
    if not smoked:
        sys.exit("A smoke check failed (above).")


if __name__ == "__main__":
    main()
