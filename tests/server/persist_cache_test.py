#!/usr/bin/env python3
"""`fluoro serve --prefix-cache-file` across a restart, through the real `openai` client on
SmolLM2: a request with a long system prompt, SIGTERM (the cache is saved at exit), a new server
process whose first request on that system prompt is served from the restored cache
(usage.prompt_tokens_details.cached_tokens); then a corrupted file, which the next start reports
and ignores, serving the request from scratch.

Usage: persist_cache_test.py FLUORO_BINARY MODEL.gguf
Exit 77 (skip) when the model or the openai package is missing, unless FLUORO_REQUIRE_MODELS=1.
"""
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

from server_test_support import binary_model_openai, free_port

SYSTEM = ("You are the support agent of a hardware store. Answer briefly and politely. "
          "You can call these tools: find_product(name) returns the SKU of a product; "
          "stock(sku) returns how many are in stock per store; price(sku) returns the price "
          "in euros; reserve(sku, store) holds one item for a day. Never invent a SKU; if a "
          "product is unknown, say so and suggest the closest one you know. ") * 3



class Server:
    def __init__(self, fluoro, model, cache_file):
        self.port = free_port()
        self.log = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            [fluoro, "serve", model, "--port", str(self.port), "-t", "2",
             "--prefix-cache-file", cache_file], stderr=self.log, text=True)
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited early: {self.stderr()}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/v1/models", timeout=2)
                return
            except OSError:
                time.sleep(0.2)
        raise AssertionError("serve did not come up")

    def stderr(self):
        self.log.seek(0)
        return self.log.read()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=120)
        assert rc == 0, f"serve exited with {rc}: {self.stderr()}"
        return self.stderr()


def ask(openai, port, question):
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none",
                           max_retries=0, timeout=120)
    r = client.chat.completions.create(
        model="m", temperature=0, max_tokens=4,
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}])
    cached = r.usage.prompt_tokens_details.cached_tokens
    print(f"{question!r}: prompt {r.usage.prompt_tokens}, cached {cached}")
    return r.usage.prompt_tokens, cached


def main():
    args = binary_model_openai(__doc__)
    if args is None:
        return 2
    fluoro, model, openai = args
    with tempfile.TemporaryDirectory() as tmp:
        cache_file = os.path.join(tmp, "smollm2.fpc")

        s = Server(fluoro, model, cache_file)
        prompt, cached = ask(openai, s.port, "Do you sell 6 mm screws?")
        assert cached == 0, "a new server with no cache file found something cached"
        log = s.stop()
        assert os.path.exists(cache_file), f"no cache file after exit: {log}"
        assert "error" not in log.lower(), log

        s = Server(fluoro, model, cache_file)
        prompt2, cached2 = ask(openai, s.port, "What does a claw hammer cost?")
        log = s.stop()
        print("\n".join(l for l in log.splitlines() if "prefix cache" in l))
        assert "prefix cache: restored" in log, log
        # Everything up to the user's question comes from the file.
        assert cached2 >= 0.8 * prompt2 and cached2 > 200, (prompt2, cached2, log)

        with open(cache_file, "r+b") as f:  # one flipped byte in the middle
            f.seek(os.path.getsize(cache_file) // 2)
            b = f.read(1)
            f.seek(-1, 1)
            f.write(bytes([b[0] ^ 0x5A]))
        s = Server(fluoro, model, cache_file)
        prompt3, cached3 = ask(openai, s.port, "Is the blue paint in stock?")
        log = s.stop()
        assert "prefix cache: ignored" in log and "checksum mismatch" in log, log
        assert cached3 == 0, (prompt3, cached3)
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
