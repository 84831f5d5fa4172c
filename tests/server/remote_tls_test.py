#!/usr/bin/env python3
"""`fluoro run --remote https://…`: the chat turn and --metrics over TLS. A small HTTPS server
here (Python's ssl over http.server, answering /v1/models, a streamed /v1/chat/completions and
/metrics the way vLLM does) with a certificate made for 127.0.0.1 by `openssl req`: with that
certificate as --ca-file the answer streams through; without it (the system's CAs do not know
it) the handshake is refused naming the verification; a certificate valid but for another
address is refused too (the name is checked, not only the chain); a host name is checked against
the certificate's DNS name.

Usage: remote_tls_test.py FLUORO_BINARY
"""
import http.server
import json
import os
import ssl
import subprocess
import sys
import tempfile
import threading

from server_test_support import free_port

CHUNKS = ["Hello", " over", " TLS"]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, ctype, body):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/v1/models":
            self.send(200, "application/json", json.dumps({"data": [{"id": "tls-model"}]}).encode())
        elif self.path == "/metrics":
            self.send(200, "text/plain", b"vllm:num_requests_running 0\n"
                                         b"vllm:generation_tokens_total 3\n")
        else:
            self.send(404, "application/json", b'{"error": {"message": "no such path"}}')

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert body["stream"] is True and body["model"] == "tls-model", body
        events = [{"choices": [{"index": 0, "delta": {"content": c}}]} for c in CHUNKS]
        events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        events.append({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3}})
        for e in events:
            e["model"] = "tls-model"
        stream = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
        self.send(200, "text/event-stream", stream + b"data: [DONE]\n\n")


def certificate(d, name, san):
    """A self-signed certificate for `san` ("IP:127.0.0.1", "DNS:localhost")."""
    key, cert = os.path.join(d, name + ".key"), os.path.join(d, name + ".pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                    "-out", cert, "-days", "1", "-subj", "/CN=" + san.split(":")[1], "-addext",
                    "subjectAltName=" + san], check=True, capture_output=True)
    return key, cert


def serve(key, cert):
    port = free_port()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, port


def run(fluoro, *args):
    return subprocess.run([fluoro, "run", *args], capture_output=True, text=True, timeout=60)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    fluoro = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        key, cert = certificate(d, "local", "IP:127.0.0.1")
        httpd, port = serve(key, cert)
        url = f"https://127.0.0.1:{port}"
        ok = run(fluoro, "--remote", url, "tls-model", "hi", "--ca-file", cert, "--metrics")
        print(ok.stdout, ok.stderr)
        assert ok.returncode == 0, ok.stderr
        assert ok.stdout.strip() == "".join(CHUNKS), ok.stdout
        lines = ok.stderr.strip().splitlines()
        assert lines[-2].startswith(f"{url}/v1 tls-model: prompt 5"), lines
        assert "generated 3" in lines[-2] and "3 chunks" in lines[-2], lines
        assert lines[-1].startswith("server (vllm names): running 0"), lines

        unknown = run(fluoro, "--remote", url, "tls-model", "hi")
        assert unknown.returncode != 0, unknown.stdout
        assert "TLS handshake failed" in unknown.stderr, unknown.stderr
        assert "certificate verify failed" in unknown.stderr, unknown.stderr

        missing = run(fluoro, "--remote", url, "tls-model", "hi", "--ca-file", d + "/none.pem")
        assert missing.returncode != 0 and "cannot read the CA certificates" in missing.stderr, \
            missing.stderr
        httpd.shutdown()

        # Trusted certificates for another address or name than the URL's are refused; the
        # right name (sent as SNI too) is accepted.
        for san, host, ok_expected in (("IP:10.9.9.9", "127.0.0.1", False),
                                       ("DNS:localhost", "localhost", True),
                                       ("DNS:example.org", "localhost", False)):
            key2, cert2 = certificate(d, san.replace(":", "_"), san)
            httpd2, port2 = serve(key2, cert2)
            r = run(fluoro, "--remote", f"https://{host}:{port2}", "tls-model", "hi",
                    "--ca-file", cert2)
            httpd2.shutdown()
            if ok_expected:
                assert r.returncode == 0 and r.stdout.strip() == "".join(CHUNKS), (san, r.stderr)
            else:
                assert r.returncode != 0, (san, r.stdout)
                assert "certificate verify failed" in r.stderr, (san, r.stderr)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
