# Image chats through a server's OpenAI route (issue 38's speed table): the time to first token of
# one image chat (each request a picture not seen before, so no prefix cache helps), and 16
# concurrent image chats (16 different pictures): their mean and worst time to first token and
# the wall time until all have their first token. The same requests go to vkllm and to
# llama.cpp's llama-server (with --mmproj), so the two are measured alike.
#
#   python3 bench/vision_bench.py URL MODEL IMAGE_DIR OUT.json [--create TEXT.gguf PROJ.gguf]
#   python3 bench/vision_bench.py --make-images IMAGE_DIR
#
# IMAGE_DIR holds the pictures (*.jpg / *.png, at least 22: a warm-up, 5 single chats and 16
# concurrent); --make-images writes 22 different 896x896 PNGs there (gradients, no dependency);
# --create uploads the two GGUFs to a vkllm server and creates MODEL from them first.
import base64, hashlib, json, os, random, statistics, struct, sys, threading, time, urllib.request
import zlib


def make_images(directory, n=22, size=896):
    os.makedirs(directory, exist_ok=True)
    for i in range(n):
        rnd = random.Random(i)
        a, b, c = rnd.randint(1, 7), rnd.randint(1, 7), rnd.randint(0, 255)
        raw = b"".join(
            b"\0" + bytes(v for x in range(size) for v in (
                (x * a + c) // 4 % 256, (y * b) // 4 % 256, ((x + y) * (a + b) // 8 + c) % 256))
            for y in range(size))

        def chunk(tag, data):
            return (struct.pack(">I", len(data)) + tag + data +
                    struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))
        with open(os.path.join(directory, f"img{i:02d}.png"), "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\n" +
                    chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)) +
                    chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


if sys.argv[1] == "--make-images":
    make_images(sys.argv[2])
    sys.exit(0)

url, model, image_dir, out = sys.argv[1:5]


def post(path, body=None, raw=None, timeout=1200):
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.read()


if "--create" in sys.argv:
    i = sys.argv.index("--create")
    files = {}
    for name, path in (("model.gguf", sys.argv[i + 1]), ("mmproj.gguf", sys.argv[i + 2])):
        blob = open(path, "rb").read()
        digest = "sha256:" + hashlib.sha256(blob).hexdigest()
        post("/api/blobs/" + digest, raw=blob)
        files[name] = digest
    post("/api/create", {"model": model, "files": files, "stream": False})
    post("/api/generate", {"model": model, "keep_alive": -1})  # load

images = sorted(os.path.join(image_dir, f) for f in os.listdir(image_dir)
                if f.endswith((".jpg", ".jpeg", ".png")))
if len(images) < 22:
    sys.exit("vision_bench: at least 22 pictures wanted in " + image_dir)


def data_url(path):
    kind = "png" if path.endswith(".png") else "jpeg"
    return f"data:image/{kind};base64," + base64.b64encode(open(path, "rb").read()).decode()


def first_token(path, max_tokens=8):
    """Seconds from the request to the first streamed content, and to the end."""
    body = {"model": model, "stream": True, "max_tokens": max_tokens, "temperature": 0,
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "Describe this picture."},
                {"type": "image_url", "image_url": {"url": data_url(path)}}]}]}
    req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 method="POST", headers={"Content-Type": "application/json"})
    t = time.perf_counter()
    first = None
    with urllib.request.urlopen(req, timeout=1200) as r:
        for line in r:
            line = line.strip()
            if not line.startswith(b"data:") or line == b"data: [DONE]":
                continue
            chunk = json.loads(line[5:])
            delta = chunk.get("choices", [{}])[0].get("delta", {}) if chunk.get("choices") else {}
            if first is None and (delta.get("content") or delta.get("reasoning_content")):
                first = time.perf_counter() - t
    return first if first is not None else time.perf_counter() - t, time.perf_counter() - t


first_token(images[0])  # warm-up: pipelines, buffers (this picture is not timed again)
single = [first_token(p)[0] for p in images[1:6]]
res = {"single_ttft_s": single, "single_ttft_median_s": statistics.median(single)}

ttfts = [None] * 16


def worker(k):
    ttfts[k] = first_token(images[6 + k])[0]


ths = [threading.Thread(target=worker, args=(k,)) for k in range(16)]
t0 = time.perf_counter()
for th in ths:
    th.start()
for th in ths:
    th.join()
res["concurrent16"] = {"ttft_mean_s": statistics.mean(ttfts), "ttft_max_s": max(ttfts),
                       "wall_s": time.perf_counter() - t0, "ttft_s": ttfts}
json.dump(res, open(out, "w"), indent=1)
print(json.dumps({"single_ttft_median_s": res["single_ttft_median_s"],
                  "concurrent16": {k: v for k, v in res["concurrent16"].items() if k != "ttft_s"}}))
