#!/usr/bin/env python3
"""Speculative decoding through the real server, per VKLLM_SPECULATIVE mode (issue 39).

For each mode a fresh `vkllm serve` loads GGUF (a model created from it with a raw template);
the model first continues PROMPT greedily for GEN tokens (its own text), then is asked the same
with that text quoted back before the prompt (prompt lookup's case: the continuation is in the
context) and without (little for lookup to find). Prints per mode and prompt the decode tok/s
(Ollama's eval_count / eval_duration, best of RUNS), the generated token count, and the drafted /
accepted counts from /metrics over the timed requests; every mode's text must equal the first
mode's (greedy output does not depend on speculation).

  bench/spec_bench.py VKLLM_BIN GGUF [--gen 128] [--runs 3] [--modes off,ngram]
      [--prompt TEXT] [--json OUT]

Environment passes through to the server (VKLLM_DEVICE, VKLLM_DRAFT_MAX, ...).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


def metrics(url):
    with urllib.request.urlopen(url + "/metrics", timeout=60) as r:
        text = r.read().decode()
    drafted = accepted = 0.0
    for line in text.splitlines():
        if line.startswith("vkllm_speculative_drafted_tokens_total"):
            drafted += float(line.split()[-1])
        elif line.startswith("vkllm_speculative_accepted_tokens_total"):
            accepted += float(line.split()[-1])
    return drafted, accepted


def serve(binary, mode, home, models):
    env = dict(os.environ, OLLAMA_MODELS=models, HOME=home,
               OLLAMA_HOST="127.0.0.1:0", VKLLM_SPECULATIVE=mode)
    log = open(os.path.join(home, "serve.log"), "w+")
    proc = subprocess.Popen([binary, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    for _ in range(600):
        log.seek(0)
        m = re.search(r"Listening on \S*:(\d+)", log.read())
        if m:
            return proc, "127.0.0.1:" + m.group(1)
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    log.seek(0)
    proc.kill()
    sys.exit("vkllm serve did not start:\n" + log.read())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("gguf")
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--modes", default="off,ngram")
    ap.add_argument("--prompt", default="Once upon a time, in a quiet village by the sea,")
    ap.add_argument("--json")
    args = ap.parse_args()
    results, texts = [], {}
    store = tempfile.TemporaryDirectory()  # the model is created once, served in every mode
    created = False
    for mode in args.modes.split(","):
        with tempfile.TemporaryDirectory() as home:
            proc, host = serve(args.binary, mode, home, store.name)
            url = "http://" + host
            try:
                if not created:
                    modelfile = os.path.join(home, "Modelfile")
                    with open(modelfile, "w") as f:
                        f.write(f"FROM {os.path.abspath(args.gguf)}\nTEMPLATE {{{{ .Prompt }}}}\n")
                    subprocess.run([args.binary, "create", "m", "-f", modelfile], check=True,
                                   env=dict(os.environ, OLLAMA_HOST=host), capture_output=True)
                    created = True

                def generate(prompt):
                    return post(url + "/api/generate", {
                        "model": "m", "prompt": prompt, "raw": True, "stream": False,
                        "options": {"temperature": 0, "num_predict": args.gen}})

                own = generate(args.prompt)["response"]
                cases = {"quoted": args.prompt + own + "\n\n" + args.prompt,
                         "unquoted": args.prompt}
                for case, prompt in cases.items():
                    d0, a0 = metrics(url)
                    best, count, text = 0.0, 0, None
                    for _ in range(args.runs):
                        r = generate(prompt)
                        rate = r["eval_count"] / (r["eval_duration"] / 1e9)
                        best, count, text = max(best, rate), r["eval_count"], r["response"]
                    d1, a1 = metrics(url)
                    drafted, accepted = (d1 - d0) / args.runs, (a1 - a0) / args.runs
                    same = texts.setdefault(case, text) == text
                    results.append({"mode": mode, "case": case, "tok_per_s": best,
                                    "tokens": count, "drafted": drafted, "accepted": accepted,
                                    "same_text": same})
                    print(f"{mode:6s} {case:9s} {best:8.1f} tok/s  {count:4d} tokens  drafted "
                          f"{drafted:6.1f} accepted {accepted:6.1f} per request  "
                          f"{'same text' if same else 'TEXT DIFFERS'}", flush=True)
            finally:
                proc.terminate()
                proc.wait()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if all(r["same_text"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
