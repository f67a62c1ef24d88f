#!/usr/bin/env python3
"""Side-by-side tables of vkllm and llama.cpp. By default the GPU table (CUDA and Vulkan) of one
`scripts/device-bench compare` run: reads the raw results folder and prints Markdown.

Files read (TAG = <shape>-<type>, DEV = CUDA0 | Vulkan0):
  vkllm-TAG.json               vkllm bench --json (prefill 512, decode at batches 1/8/32/64)
  llama-bench-DEV-TAG.json     llama-bench -p 512 -n 128 -o json
  batched-DEV-TAG.jsonl        llama-batched-bench -npp 8 -ntg 128 -npl 1,8,32,64 (jsonl lines)
  vkllm-depthD-TAG.json        vkllm bench --batch 1 --depth D
  llama-depth-DEV-TAG.json     llama-bench -p 512 -n 128 -d D1,D2,... -o json
  gpu.txt                      nvidia-smi's description of the GPU

With --cpu, the CPU table of `scripts/cpu-bench compare` (vkllm's CPU backend against llama.cpp's
CPU build, same threads):
  vkllm-TAG.json               VKLLM_DEVICE=cpu vkllm bench --batch 1 --json
  llama-bench-CPU-TAG.json     llama-bench -t THREADS -p 512 -n 128 -o json
  machine.txt                  threads, CPU model and load average before and after

With --embed, the embedding table of `scripts/device-bench embed` (issue 10 item 9):
  vkllm-embed-TAG.json         bench_embedding's Google Benchmark JSON (BM_Embed/batch:B)
  llama-embed-DEV-TAG-bB.txt   llama-embedding's log for N batches of B inputs: a batch's time
                               is the gap between the timestamped starts of consecutive
                               batches, the first gap (warm-up) left out
  embed.txt                    tokens per input and the list of batch sizes
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
    # The median of llama-bench's repetitions, not their mean: its first repetition can carry
    # one-time costs (a cold driver shader cache for the Vulkan backend, CUDA's first launches)
    # that its warm-up run does not absorb, while `vkllm bench` reports its best warm repetition.
    for r in load_json(path) or []:
        if r.get("n_prompt") == n_prompt and r.get("n_gen") == n_gen and r.get("n_depth", 0) == depth:
            samples = sorted(r.get("samples_ts") or [])
            return samples[len(samples) // 2] if samples else r.get("avg_ts")
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


def read_lines(path):
    try:
        with open(path) as f:
            return f.read().strip().splitlines()
    except OSError:
        return []


def cpu_main(raw):
    # One folder per round (r1, r2, ...) when the comparison was repeated: each side's best round.
    dirs = sorted(glob.glob(os.path.join(raw, "r[0-9]*"))) or [raw]
    tags = sorted({os.path.basename(p)[len("vkllm-"):-5]
                   for d in dirs for p in glob.glob(os.path.join(d, "vkllm-*.json"))} |
                  {os.path.basename(p)[len("llama-bench-CPU-"):-5]
                   for d in dirs for p in glob.glob(os.path.join(d, "llama-bench-CPU-*.json"))},
                  key=lambda t: (t.startswith("ref-"), t))
    for line in read_lines(os.path.join(raw, "machine.txt")):
        print(f"{line}  ")
    if len(dirs) > 1:
        print(f"best of {len(dirs)} rounds per side and metric  ")
    # What each side ran on: vkllm's device name, llama.cpp's build (backends, CPU features).
    for d in dirs:
        for tag in tags:
            vk = load_json(os.path.join(d, f"vkllm-{tag}.json"))
            if vk and vk.get("device"):
                print(f"vkllm device: {vk['device']}  ")
                # Before `vkllm bench` runs on the CPU backend, VKLLM_DEVICE=cpu leaves it on Vulkan.
                if re.search(r"llvmpipe|lavapipe|NVIDIA|Radeon|Graphics|Vulkan", vk["device"], re.I):
                    print("**vkllm ran on a Vulkan device, not on its CPU backend: its column is no "
                          "CPU number**  ")
                break
        else:
            continue
        break
    for d in dirs:
        lb = [load_json(os.path.join(d, f"llama-bench-CPU-{tag}.json")) for tag in tags]
        lb = [x for x in lb if x]
        if lb:
            r = lb[0][0]
            print(f"llama-bench: {r.get('backends', '')} backend, {r.get('cpu_info', '')}, "
                  f"{r.get('n_threads', '')} threads  ")
            break
    print()
    print("| model | metric (tok/s) | vkllm CPU | llama.cpp CPU | vkllm / llama.cpp |")
    print("|---|---|---|---|---|")

    def best(values):
        values = [v for v in values if v is not None]
        return max(values) if values else None

    for tag in tags:
        vks = [load_json(os.path.join(d, f"vkllm-{tag}.json")) for d in dirs]
        lbs = [os.path.join(d, f"llama-bench-CPU-{tag}.json") for d in dirs]
        pp = best((vk or {}).get("prefill", {}).get("tok_per_s") for vk in vks)
        tg = best(vk_decode(vk, 1) for vk in vks)
        for label, metric, v, c in ((tag, "prefill 512", pp, best(llama_bench(p, 512, 0) for p in lbs)),
                                    ("", "decode (tg128)", tg, best(llama_bench(p, 0, 128) for p in lbs))):
            print(f"| {label} | {metric} | {fmt(v)} | {fmt(c)} | {ratio(v, c)} |")


BATCH_START = re.compile(r"^(\d+)\.(\d+)\.(\d+)\.(\d+) . batch_decode: n_tokens = (\d+), n_seq = (\d+)")


def llama_embed_batch(raw, dev, tag, batch):
    """Mean seconds, tokens and inputs of one batch: the gaps between the timestamped starts of
    consecutive batches in llama-embedding's log, the first gap (warm-up) left out."""
    starts = []
    for line in read_lines(os.path.join(raw, f"llama-embed-{dev}-{tag}-b{batch}.txt")):
        m = BATCH_START.match(line)
        if m:
            mi, se, ms, us, toks, seqs = (int(x) for x in m.groups())
            starts.append(((mi * 60 + se) * 1e3 + ms + us / 1e3, toks, seqs))
    gaps = [(b[0] - a[0], a[1], a[2]) for a, b in zip(starts, starts[1:])][1:]
    gaps = [g for g in gaps if g[2] == batch]
    if not gaps:
        return None
    return (sum(g[0] for g in gaps) / len(gaps) / 1e3, gaps[0][1], gaps[0][2])


def embed_main(raw):
    info = dict(line.split("=", 1) for line in read_lines(os.path.join(raw, "embed.txt")) if "=" in line)
    batches = [int(b) for b in info.get("batches", "1 16 64").split()]
    devs = info.get("devs", "CUDA0 Vulkan0").split()
    gpu = read_lines(os.path.join(raw, "gpu.txt"))
    if len(gpu) > 1:
        print(f"GPU: {gpu[-1]}  ")
    print(f"{info.get('tokens', '?')} tokens per input; vkllm: bench_embedding (runtime::Embedder, "
          f"one embed() call per batch); llama.cpp: llama-embedding, one llama_decode per batch\n")
    names = {"CUDA0": "llama.cpp CUDA", "Vulkan0": "llama.cpp Vulkan", "CPU": "llama.cpp CPU"}
    head = ["model", "batch", "metric", "vkllm"] + [names.get(d, d) for d in devs] + \
        [f"vkllm / {names.get(d, d).split()[-1]}" for d in devs]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    tags = sorted({os.path.basename(p)[len("vkllm-embed-"):-5]
                   for p in glob.glob(os.path.join(raw, "vkllm-embed-*.json"))} |
                  {re.sub(r"^llama-embed-[^-]+-(.+)-b\d+\.txt$", r"\1", os.path.basename(p))
                   for p in glob.glob(os.path.join(raw, "llama-embed-*.txt"))})
    for tag in tags:
        vk = {}
        for b in (load_json(os.path.join(raw, f"vkllm-embed-{tag}.json")) or {}).get("benchmarks", []):
            m = re.search(r"batch:(\d+)", b.get("name", ""))
            if m and b.get("run_type", "iteration") == "iteration":
                vk[int(m.group(1))] = (b.get("inputs/s"), b.get("tokens/s"))
        for i, batch in enumerate(batches):
            ll = [llama_embed_batch(raw, d, tag, batch) for d in devs]
            for j, (metric, k) in enumerate((("inputs/s", 0), ("tokens/s", 1))):
                v = vk.get(batch, (None, None))[k]
                c = [None if x is None else x[2 if k == 0 else 1] / x[0] for x in ll]
                label = tag if i == 0 and j == 0 else ""
                bl = str(batch) if j == 0 else ""
                cells = [label, bl, metric, fmt(v)] + [fmt(x) for x in c] + [ratio(v, x) for x in c]
                print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    args = sys.argv[1:]
    modes = {"--cpu": cpu_main, "--embed": embed_main}
    if len(args) == 2 and args[0] in modes:
        modes[args[0]](args[1])
    elif len(args) == 1:
        main(args[0])
    else:
        sys.exit("usage: compare_table.py [--cpu|--embed] RAW_RESULTS_DIR")
