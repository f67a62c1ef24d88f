#!/usr/bin/env python3
"""Streaming chat clients for the scale-out test and benchmark (standard library only).

  scaleout_clients.py load  URL MODEL --clients 64 --seconds 15 --out stats.json
      Every client chats in a loop (a few turns per conversation, one X-Session-Id each) with
      /api/chat streaming, until the time is up. Writes every request's outcome: start and end
      (seconds since the run began), the replica nginx chose (X-Vkllm-Upstream, when the
      balancer adds it), ok or the error.
  scaleout_clients.py chats URL MODEL --chats 32 --turns 6 --parallel 8 --out chats.json
      32 multi-turn conversations (each turn resends the whole history, as chat clients do),
      `parallel` at a time, each user turn lengthened by --turn-words words; records each
      turn's time to first token.

--key adds `Authorization: Bearer KEY`; --no-session leaves X-Session-Id out.
"""
import argparse
import http.client
import json
import random
import sys
import threading
import time
import urllib.parse

# Distinct user turns, long enough that a conversation's history spans many KV blocks.
TOPICS = ["the river", "a lighthouse", "winter roads", "the old mill", "a letter home",
          "the harvest", "a storm at sea", "the village fair", "a quiet library", "mountain paths"]


WORDS = ("quiet morning light fell across the fields while travellers spoke of distant towns "
         "and old stories passed from one generation to the next").split()


def user_turn(conversation, turn, extra_words=0):
    topic = TOPICS[(conversation + turn) % len(TOPICS)]
    text = (f"Conversation {conversation}, turn {turn}: tell me more about {topic}, "
            f"what people there remember of it and why it still matters to them today.")
    if extra_words:  # a longer turn, distinct per conversation and turn
        start = (conversation * 7 + turn * 3) % len(WORDS)
        text += " " + " ".join(WORDS[(start + k) % len(WORDS)] for k in range(extra_words))
    return text


class Client:
    def __init__(self, url, key, session_header):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port
        self.key = key
        self.session_header = session_header

    def chat(self, model, messages, session, num_predict, timeout=120):
        """One streamed /api/chat. Returns (ok, error, upstream, ttft_s, reply)."""
        body = json.dumps({"model": model, "messages": messages, "stream": True,
                           "options": {"temperature": 0, "num_predict": num_predict}})
        headers = {"Content-Type": "application/json"}
        if self.key:
            headers["Authorization"] = "Bearer " + self.key
        if self.session_header:
            headers["X-Session-Id"] = session
        t0 = time.perf_counter()
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        upstream, ttft, reply = "", None, []
        try:
            conn.request("POST", "/api/chat", body, headers)
            resp = conn.getresponse()
            upstream = resp.getheader("X-Vkllm-Upstream", "")
            if resp.status != 200:
                return False, f"HTTP {resp.status}: {resp.read()[:200]!r}", upstream, None, ""
            done = False
            for line in resp:
                if not line.strip():
                    continue
                obj = json.loads(line)
                if "error" in obj:
                    return False, "stream error: " + str(obj["error"]), upstream, ttft, ""
                if ttft is None:
                    ttft = time.perf_counter() - t0
                reply.append(obj.get("message", {}).get("content", ""))
                if obj.get("done"):
                    done = True
                    break
            if not done:
                return False, "stream ended without done", upstream, ttft, ""
            return True, "", upstream, ttft, "".join(reply)
        except Exception as e:  # connection refused or reset, timeout, bad JSON
            return False, f"{type(e).__name__}: {e}", upstream, ttft, ""
        finally:
            conn.close()


def run_load(a):
    client = Client(a.url, a.key, not a.no_session)
    results, lock = [], threading.Lock()
    t0_epoch, t_begin = time.time(), time.perf_counter()
    deadline = t_begin + a.seconds

    def worker(i):
        conversation = 0
        while time.perf_counter() < deadline:
            session = f"load-{i}-{conversation}"
            messages = []
            for turn in range(a.turns):
                if time.perf_counter() >= deadline:
                    break
                messages.append({"role": "user", "content": user_turn(i, turn)})
                start = time.perf_counter() - t_begin
                ok, err, upstream, ttft, reply = client.chat(a.model, messages, session,
                                                             a.num_predict)
                end = time.perf_counter() - t_begin
                with lock:
                    results.append({"client": i, "start": round(start, 3), "end": round(end, 3),
                                    "ok": ok, "error": err, "upstream": upstream,
                                    "ttft": ttft})
                if not ok:
                    break
                messages.append({"role": "assistant", "content": reply})
            conversation += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(a.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    json.dump({"t0_epoch": t0_epoch, "requests": results}, open(a.out, "w"))
    ok = sum(r["ok"] for r in results)
    print(f"load: {len(results)} requests, {ok} ok, {len(results) - ok} failed "
          f"({a.clients} clients, {a.seconds} s)")


def run_chats(a):
    client = Client(a.url, a.key, not a.no_session)
    turns, lock = [], threading.Lock()
    queue = list(range(a.chats))
    random.Random(1).shuffle(queue)

    def worker():
        while True:
            with lock:
                if not queue:
                    return
                c = queue.pop()
            messages = []
            for turn in range(a.turns):
                messages.append({"role": "user", "content": user_turn(c, turn, a.turn_words)})
                ok, err, upstream, ttft, reply = client.chat(a.model, messages, f"chat-{c}",
                                                             a.num_predict)
                with lock:
                    turns.append({"chat": c, "turn": turn, "ok": ok, "error": err,
                                  "upstream": upstream, "ttft": ttft})
                if not ok:
                    break
                messages.append({"role": "assistant", "content": reply})

    threads = [threading.Thread(target=worker) for _ in range(a.parallel)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    json.dump(turns, open(a.out, "w"))
    bad = [t for t in turns if not t["ok"]]
    if bad:
        print(f"chats: {len(bad)} failed turns, first: {bad[0]['error']}", file=sys.stderr)
        sys.exit(1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["load", "chats"])
    p.add_argument("url")
    p.add_argument("model")
    p.add_argument("--out", required=True)
    p.add_argument("--key", default="")
    p.add_argument("--no-session", action="store_true")
    p.add_argument("--num-predict", type=int, default=8)
    p.add_argument("--turns", type=int, default=4)
    p.add_argument("--clients", type=int, default=64)
    p.add_argument("--seconds", type=float, default=15)
    p.add_argument("--chats", type=int, default=32)
    p.add_argument("--parallel", type=int, default=8)
    p.add_argument("--turn-words", type=int, default=0, help="chats: words added to each turn")
    a = p.parse_args()
    run_load(a) if a.mode == "load" else run_chats(a)


if __name__ == "__main__":
    main()
