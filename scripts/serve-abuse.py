#!/usr/bin/env python3
"""Abuses a live `fluoro serve` the way issue 38's probe did and prints what a user would see:
the resident memory after warm-up, a normal request's latency while 50 clients trickle header
bytes, the answers to five 10 MiB chunked bodies and five 64 MiB-in-64 KiB gzip bodies (413 each), and the
resident memory after the abuse and 20 more requests (the probe saw +160 MB with the old server).
  scripts/serve-abuse.py [FLUORO_BINARY] [MODEL.gguf] [PORT]
Defaults: build/release/app/fluoro, models/SmolLM2-135M-Instruct.Q4_1.gguf, 18089."""
import gzip, json, os, socket, subprocess, sys, threading, time, urllib.request

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build/release/app/fluoro")
model = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "models/SmolLM2-135M-Instruct.Q4_1.gguf")
port = int(sys.argv[3]) if len(sys.argv) > 3 else 18089
srv = subprocess.Popen([binary, "serve", model, "--port", str(port), "-t", "2"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
def rss():
    for l in open(f"/proc/{srv.pid}/status"):
        if l.startswith("VmRSS"): return int(l.split()[1]) // 1024
def chat():
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 8, "temperature": 0}).encode()
    r = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", body, {"Content-Type": "application/json"})
    t0 = time.time(); urllib.request.urlopen(r, timeout=60).read(); return time.time() - t0
for _ in range(100):
    try: chat(); break
    except Exception: time.sleep(0.5)
for _ in range(5): chat()
base = rss(); print("baseline after 6 requests: RSS", base, "MiB")
def slow():
    s = socket.create_connection(("127.0.0.1", port))
    try:
        for c in b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n":
            s.send(bytes([c])); time.sleep(0.5)
    except Exception: pass
    s.close()
ths = [threading.Thread(target=slow) for _ in range(50)]
[t.start() for t in ths]
time.sleep(2); print("normal request during 50 slow clients: %.2f s" % chat())
def raw(head, body_iter):
    s = socket.create_connection(("127.0.0.1", port)); s.send(head)
    try:
        for b in body_iter: s.sendall(b)
    except Exception: pass
    try: r = s.recv(200)
    except Exception: r = b""
    s.close(); return r.split(b"\r\n")[0]
chunk = b"%x\r\n" % 65536 + b" " * 65536 + b"\r\n"
for i in range(5):
    print("chunked 10 MiB:", raw(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", [chunk] * 160))
bomb = gzip.compress(b" " * (64 << 20))
for i in range(5):
    print("gzip bomb %d KiB:" % (len(bomb) // 1024), raw(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(bomb), [bomb]))
[t.join() for t in ths]
for _ in range(20): chat()
time.sleep(2)
after = rss(); print("after the abuse and 20 more requests: RSS", after, "MiB (+%d)" % (after - base))
srv.terminate(); srv.wait()
