"""What the `fluoro serve` client tests share: the skip convention of ctest (exit 77 when the
model or the `openai` package is missing, a failure instead under FLUORO_REQUIRE_MODELS=1), their
command line and a free port."""
import os
import socket
import sys

SKIP = 77


def skip_or_fail(why):
    if os.environ.get("FLUORO_REQUIRE_MODELS") == "1":
        print(f"FAIL: {why} (FLUORO_REQUIRE_MODELS=1)", file=sys.stderr)
        sys.exit(1)
    print(f"SKIP: {why}", file=sys.stderr)
    sys.exit(SKIP)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def binary_model_openai(doc):
    """(fluoro binary, model path, openai module) from argv; None after printing `doc` when the
    arguments are wrong. Skips (or fails) like require_model_and_openai."""
    if len(sys.argv) != 3:
        print(doc, file=sys.stderr)
        return None
    return sys.argv[1], sys.argv[2], require_model_and_openai(sys.argv[2])


def require_model_and_openai(model):
    """Returns the `openai` module; skips (or fails) when it or the model file is missing."""
    if not os.path.exists(model):
        skip_or_fail(f"model {model} is missing (scripts/fetch-model.sh)")
    try:
        import openai
    except ImportError:
        skip_or_fail("the openai Python package is missing (pip install openai)")
    return openai


def wait_ready(proc, port, key=None, timeout=120):
    """GET /v1/models until `fluoro serve` answers (with the API key when it has one); its
    parsed body. RuntimeError when the process exits or the time runs out."""
    import json
    import time
    import urllib.request
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/models", headers=headers)
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"fluoro serve exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(req, timeout=2) as r:
                return json.load(r)
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("fluoro serve did not answer in time")


def stop_server(proc, timeout=30):
    """SIGTERM (`fluoro serve` then saves and exits), then SIGKILL if it has not gone in time."""
    import subprocess
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
