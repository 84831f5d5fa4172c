#!/usr/bin/env python3
# Four chat requests against a running `fluoro serve` (PORT): A1 (a 1017-token support system
# prompt + a question), B (another system prompt), A2 (the support prompt + another question),
# B2. Prints prompt tokens, cached tokens and whole-request ms of each: whether A2 still finds
# the support prompt cached after B came in between (docs/PERFORMANCE.md, --prefix-cache).
#   usage: scripts/measure-prefix-cache.py PORT
import json, sys, time, urllib.request
port = int(sys.argv[1])
rules = " ".join(f"Rule {i}: always answer politely and cite the order number {i}." for i in range(60))
sysA = "You are a support agent for ACME. " + rules
sysB = "You are a poet. Write short poems only."
def ask(system, q):
    body = {"model": "m", "max_tokens": 4, "temperature": 0,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": q}]}
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions",
                                 data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    t = time.time()
    r = json.load(urllib.request.urlopen(req))
    u = r["usage"]
    return u["prompt_tokens"], u.get("prompt_tokens_details", {}).get("cached_tokens"), round((time.time() - t) * 1000)
for name, s, q in [("A1", sysA, "Where is order 17?"), ("B", sysB, "Rain."), ("A2", sysA, "Refund order 9."), ("B2", sysB, "Snow.")]:
    print(name, *ask(s, q))
