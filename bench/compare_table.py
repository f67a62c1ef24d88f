#!/usr/bin/env python3
"""Side-by-side table of vkllm and llama.cpp (CUDA and Vulkan backends) from one
`scripts/device-bench compare` run: reads the raw results folder and prints Markdown.

Files read (TAG = <shape>-<type>, DEV = CUDA0 | Vulkan0):
  vkllm-TAG.json               vkllm bench --json (prefill 512, decode at batches 1/8/32/64)
  llama-bench-DEV-TAG.json     llama-bench -p 512 -n 128 -o json
  batched-DEV-TAG.jsonl        llama-batched-bench -npp 8 -ntg 128 -npl 1,8,32,64 (jsonl lines)
  vkllm-depthD-TAG.json        vkllm bench --batch 1 --depth D
  llama-depth-DEV-TAG.json     llama-bench -p 512 -n 128 -d D1,D2,... -o json
  gpu.txt                      nvidia-smi's description of the GPU
"""
import glob
import json
import os
import re
import sys

DEVS = ("CUDA0", "Vulkan0")


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def load_jsonl(path):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    try:
                        rows.append(json.loads(line))
                    except ValueError:
                        pass
    except OSError:
        pass
    return rows


def llama_bench(path, n_prompt, n_gen, depth=0):
    for r in load_json(path) or []:
        if r.get("n_prompt") == n_prompt and r.get("n_gen") == n_gen and r.get("n_depth", 0) == depth:
            return r.get("avg_ts")
    return None


def batched(path, pl):
    for r in load_jsonl(path):
        if r.get("pl") == pl:
            return r.get("speed_tg")
    return None


def vk_decode(j, batch):
    for d in (j or {}).get("decode", []):
        if d.get("batch") == batch:
            return d.get("tok_per_s")
    return None


def fmt(v):
    return "–" if v is None else f"{v:.0f}" if v >= 100 else f"{v:.1f}"


def ratio(a, b):
    return "–" if a is None or b is None or b == 0 else f"{a / b:.2f}×"


def row(label, metric, v, c, k):
    return f"| {label} | {metric} | {fmt(v)} | {fmt(c)} | {fmt(k)} | {ratio(v, c)} | {ratio(v, k)} |"


def main(raw):
    tags = sorted({re.sub(r"^vkllm-", "", os.path.basename(p))[:-5]
                   for p in glob.glob(os.path.join(raw, "vkllm-*.json")) if "-depth" not in p} |
                  {re.sub(r"^llama-bench-[^-]+-", "", os.path.basename(p))[:-5]
                   for p in glob.glob(os.path.join(raw, "llama-bench-*.json"))},
                  key=lambda t: (("8b" in t), t))
    gpu = ""
    try:
        with open(os.path.join(raw, "gpu.txt")) as f:
            lines = f.read().strip().splitlines()
            gpu = lines[-1] if len(lines) > 1 else ""
    except OSError:
        pass
    print(f"GPU: {gpu}\n")
    print("| model | metric (tok/s) | vkllm | llama.cpp CUDA | llama.cpp Vulkan | vkllm / CUDA | vkllm / Vulkan |")
    print("|---|---|---|---|---|---|---|")
    for tag in tags:
        vk = load_json(os.path.join(raw, f"vkllm-{tag}.json"))
        lb = {d: os.path.join(raw, f"llama-bench-{d}-{tag}.json") for d in DEVS}
        bb = {d: os.path.join(raw, f"batched-{d}-{tag}.jsonl") for d in DEVS}
        pp = (vk or {}).get("prefill", {}).get("tok_per_s")
        print(row(tag, "prefill 512", pp, llama_bench(lb["CUDA0"], 512, 0),
                  llama_bench(lb["Vulkan0"], 512, 0)))
        print(row("", "decode batch 1 (tg128)", vk_decode(vk, 1), llama_bench(lb["CUDA0"], 0, 128),
                  llama_bench(lb["Vulkan0"], 0, 128)))
        for b in (8, 32, 64):
            print(row("", f"decode, {b} sequences", vk_decode(vk, b), batched(bb["CUDA0"], b),
                      batched(bb["Vulkan0"], b)))
        if vk and vk.get("roofline_tok_per_s"):
            print(f"| | batch-1 roofline ({vk['copy_gbps']:.0f} GB/s copy) | "
                  f"{vk['roofline_tok_per_s']:.0f} | "
                  f"{fmt(llama_bench(lb['CUDA0'], 0, 128) and 100 * llama_bench(lb['CUDA0'], 0, 128) / vk['roofline_tok_per_s'])}% | "
                  f"{fmt(llama_bench(lb['Vulkan0'], 0, 128) and 100 * llama_bench(lb['Vulkan0'], 0, 128) / vk['roofline_tok_per_s'])}% | "
                  f"vkllm {100 * (vk_decode(vk, 1) or 0) / vk['roofline_tok_per_s']:.0f}% | |")
    depth_files = sorted(glob.glob(os.path.join(raw, "vkllm-depth*.json")) +
                         glob.glob(os.path.join(raw, "llama-depth-*.json")))
    if depth_files:
        print("\nLong context: batch-1 decode (tg128) and prefill 512 after D tokens of context "
              "(`vkllm bench --depth D`, `llama-bench -d D`).\n")
        print("| model | context D | metric (tok/s) | vkllm | llama.cpp CUDA | llama.cpp Vulkan | vkllm / CUDA | vkllm / Vulkan |")
        print("|---|---|---|---|---|---|---|---|")
        cases = {}
        for p in glob.glob(os.path.join(raw, "vkllm-depth*.json")):
            m = re.match(r"vkllm-depth(\d+)-(.+)\.json", os.path.basename(p))
            if m:
                cases.setdefault(m.group(2), set()).add(int(m.group(1)))
        for p in glob.glob(os.path.join(raw, "llama-depth-*.json")):
            m = re.match(r"llama-depth-[^-]+-(.+)\.json", os.path.basename(p))
            if m:
                for r in load_json(p) or []:
                    cases.setdefault(m.group(1), set()).add(r.get("n_depth", 0))
        for tag, depths in sorted(cases.items()):
            for d in sorted(depths):
                vk = load_json(os.path.join(raw, f"vkllm-depth{d}-{tag}.json"))
                lf = {dev: os.path.join(raw, f"llama-depth-{dev}-{tag}.json") for dev in DEVS}
                for metric, vv, np_, ng in (("decode batch 1", vk_decode(vk, 1), 0, 128),
                                            ("prefill 512", (vk or {}).get("prefill", {}).get("tok_per_s"), 512, 0)):
                    c, k = llama_bench(lf["CUDA0"], np_, ng, d), llama_bench(lf["Vulkan0"], np_, ng, d)
                    print(f"| {tag} | {d} | {metric} | {fmt(vv)} | {fmt(c)} | {fmt(k)} | {ratio(vv, c)} | {ratio(vv, k)} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: compare_table.py RAW_RESULTS_DIR")
    main(sys.argv[1])
