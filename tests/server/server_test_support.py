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
