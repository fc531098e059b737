# SPDX-License-Identifier: MIT
"""syshax-serve with the xPU worker (xpu_worker): one greedy completion's
tokens against syshax-run's CPU-only ones, and /metrics' prefill and
decode counters by side.
    serve_case.py <syshax-serve> <model> <worker socket> <ref.json> <what>
<what>: "split" (prefill on the xPU, decode steps on both sides) or
"killed" (the worker dies during the request: steps on the CPU after it,
the same tokens). $SYSHAX_DEVICE: the daemon both use. Exit 0 or 1."""
import http.client
import json
import re
import signal
import subprocess
import sys

serve, model, sock, ref, what = sys.argv[1:6]
want = json.load(open(ref))["tokens"][0]
p = subprocess.Popen([serve, "-m", model, "--port", "0", "--kv-type", "f32",
                      "--xpu-worker", sock], stderr=subprocess.PIPE,
                     text=True)
port = None
for line in p.stderr:
    m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", line)
    if m:
        port = int(m.group(1))
        break
if port is None:
    sys.exit("FAIL: syshax-serve did not start")


def req(method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request(method, path, json.dumps(body) if body else None)
    r = c.getresponse()
    text = r.read().decode()
    c.close()
    return r.status, text


def count(name, side):
    m = re.search(r'%s\{side="%s"\} (\d+)' % (name, side), metrics)
    return int(m.group(1)) if m else -1


# Which side takes a step follows the worker's load reports; on a loaded
# machine a late report can leave every step of a request on the xPU
# (seen once under make -j2 check): "split" asks again, up to 3 requests,
# each with the same tokens, until the CPU has taken one.
for attempt in range(3):
    st, text = req("POST", "/v1/completions", dict(
        prompt=[3, 1, 4, 1, 5, 9, 2, 6], max_tokens=len(want),
        return_tokens=True, temperature=0))
    toks = json.loads(text)["choices"][0]["tokens"] if st == 200 else text
    _, metrics = req("GET", "/metrics")
    if toks != want or what != "split" or count("decode_steps_total",
                                                 "cpu") > 0:
        break
p.send_signal(signal.SIGINT)
rest = p.communicate(timeout=60)[1]

dx, dc = (count("decode_steps_total", s) for s in ("xpu", "cpu"))
px = count("prefill_chunks_total", "xpu")
good = toks == want and dc > 0 and (
    (what == "split" and dx > 0 and px > 0) or
    (what == "killed" and "worker is gone" in rest))
print(("ok" if good else "FAIL") + f": syshax-serve, {what} "
      f"({attempt + 1} request{'s' if attempt else ''}): {len(want)} "
      f"tokens {'equal' if toks == want else 'differ from'} syshax-run's "
      f"CPU-only ones; decode steps xpu {dx}, cpu {dc}; prefill chunks "
      f"xpu {px}")
if not good:
    print(toks, want, metrics[-800:], rest, sep="\n")
sys.exit(0 if good else 1)
