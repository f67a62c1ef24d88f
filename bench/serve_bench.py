# Serving overhead on the GPU: TTFT through HTTP vs the server's own prompt evaluation, and
# aggregate decode tok/s through HTTP at 1/8/32/64 concurrent streams (compare with vkllm bench).
import hashlib, json, sys, threading, time, urllib.request

url, gguf, out = sys.argv[1], sys.argv[2], sys.argv[3]

def post(path, body, raw=None):
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method="POST")
    with urllib.request.urlopen(req, timeout=600) as r:
        return r.read()

digest = "sha256:" + hashlib.sha256(open(gguf, "rb").read()).hexdigest()
post("/api/blobs/" + digest, None, raw=open(gguf, "rb").read())
post("/api/create", {"model": "m", "files": {"m.gguf": digest}, "template": "{{ .Prompt }}", "stream": False})
t0 = time.time()
post("/api/generate", {"model": "m", "keep_alive": -1})
load_s = time.time() - t0
prompt = " ".join(["The history of the world is long and full of events."] * 40)

def ttft_once(p):
    req = urllib.request.Request(url + "/api/generate", data=json.dumps(
        {"model": "m", "prompt": p, "options": {"temperature": 0, "num_predict": 2}}).encode(), method="POST")
    t = time.perf_counter()
    with urllib.request.urlopen(req) as r:
        r.readline()
        first = time.perf_counter() - t
        last = None
        for line in r:
            last = json.loads(line)
    return first, last["prompt_eval_duration"] / 1e9, last["prompt_eval_count"]

res = {"load_s": load_s, "ttft": [], "decode": []}
for i in range(6):
    f, pe, n = ttft_once(f"{i} " + prompt)  # a new first token each time: no prefix reuse
    res["ttft"].append({"http_s": f, "engine_prompt_eval_s": pe, "prompt_tokens": n})

def run_streams(n, gen=64):
    done = []
    def worker(i):
        body = {"model": "m", "prompt": f"Story {i}: once upon a time", "stream": False,
                "options": {"temperature": 0, "num_predict": gen}}
        r = json.loads(post("/api/generate", body))
        done.append(r)
    ths = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    t = time.perf_counter()
    for th in ths: th.start()
    for th in ths: th.join()
    wall = time.perf_counter() - t
    toks = sum(r["eval_count"] for r in done)
    eval_s = max(r["eval_duration"] for r in done) / 1e9
    return {"streams": n, "tokens": toks, "wall_s": wall, "tok_per_s_wall": toks / wall,
            "tok_per_s_decode": toks / eval_s}

run_streams(4, 8)  # warm-up
for n in (1, 8, 32, 64):
    res["decode"].append(run_streams(n))
json.dump(res, open(out, "w"), indent=1)
print(json.dumps(res, indent=1))
