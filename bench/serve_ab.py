# A/B of two vkllm servers on the same GPU and GGUF (e.g. before and after a server change):
# both run at once on their own ports, and every measurement alternates between them, round by
# round, so drift (clocks, thermals, other tenants) falls on both alike. Measures TTFT through
# HTTP (a fresh prompt each time: no prefix reuse) and aggregate decode tok/s at 1/8/32/64
# concurrent streams; prints each cell's median over the rounds and the ratio B/A.
#
#   python3 bench/serve_ab.py URL_A URL_B MODEL.gguf OUT.json [ROUNDS=3] [GEN=256]
import hashlib, json, statistics, sys, threading, time, urllib.request

url_a, url_b, gguf, out = sys.argv[1:5]
rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 3
gen = int(sys.argv[6]) if len(sys.argv) > 6 else 256
levels = (1, 8, 32, 64)


def post(url, path, body, raw=None):
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method="POST")
    with urllib.request.urlopen(req, timeout=600) as r:
        return r.read()


def prepare(url):
    data = open(gguf, "rb").read()
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    post(url, "/api/blobs/" + digest, None, raw=data)
    post(url, "/api/create", {"model": "m", "files": {"m.gguf": digest},
                              "template": "{{ .Prompt }}", "stream": False})
    post(url, "/api/generate", {"model": "m", "keep_alive": -1})


def ttft(url, i):
    prompt = f"{i} " + " ".join(["The history of the world is long and full of events."] * 40)
    req = urllib.request.Request(url + "/api/generate", data=json.dumps(
        {"model": "m", "prompt": prompt, "options": {"temperature": 0, "num_predict": 2}}).encode(),
        method="POST")
    t = time.perf_counter()
    with urllib.request.urlopen(req) as r:
        r.readline()
        first = time.perf_counter() - t
        for _ in r:
            pass
    return first


def streams(url, n, tokens):
    done = []

    def worker(i):
        body = {"model": "m", "prompt": f"Story {i}: once upon a time", "stream": False,
                "options": {"temperature": 0, "num_predict": tokens}}
        done.append(json.loads(post(url, "/api/generate", body)))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return sum(r["eval_count"] for r in done) / (time.perf_counter() - t)


for url in (url_a, url_b):
    prepare(url)
    streams(url, 4, 8)  # warm-up

cells = {"A": {}, "B": {}}
for r in range(rounds):
    for name, url in (("A", url_a), ("B", url_b)) if r % 2 == 0 else (("B", url_b), ("A", url_a)):
        cells[name].setdefault("ttft_ms", []).extend(ttft(url, 100 * r + k) * 1000 for k in range(3))
    for n in levels:
        order = (("A", url_a), ("B", url_b)) if (r + n) % 2 == 0 else (("B", url_b), ("A", url_a))
        for name, url in order:
            cells[name].setdefault(f"b{n}", []).append(streams(url, n, gen))

json.dump(cells, open(out, "w"), indent=1)
print(f"{'cell':>8} {'A median':>10} {'B median':>10} {'B/A':>6}  (spread A, B)")
for key in ["ttft_ms"] + [f"b{n}" for n in levels]:
    a, b = statistics.median(cells["A"][key]), statistics.median(cells["B"][key])
    spread = lambda v: (max(v) - min(v)) / statistics.median(v)
    print(f"{key:>8} {a:10.1f} {b:10.1f} {b / a:6.3f}  ({spread(cells['A'][key]):.1%}, "
          f"{spread(cells['B'][key]):.1%})")
