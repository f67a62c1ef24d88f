#!/usr/bin/env python3
"""Offline checks of deploy/: every Kubernetes manifest parses and the fields the pods depend on
agree with the server (the probes' routes and port, the port serve listens on, the settings it
reads, the metric the autoscaler reads) and with each other (selectors, Services, the registry
the replicas pull from and the one the Job pushes to).

  scaleout_manifests.py SOURCE_DIR PROBES_OUT
Writes the probe paths to PROBES_OUT (one per line) for the caller to ask a live server, and
prints what it checked. Exits non-zero naming the first disagreement.
"""
import glob
import os
import re
import sys

import yaml

src, probes_out = sys.argv[1], sys.argv[2]
kdir = os.path.join(src, "deploy", "kubernetes")
problems = []


def check(cond, what):
    if not cond:
        problems.append(what)
    return cond


# --- what the server reads and exposes, from its sources ---
sources = ""
for pattern in ("server/**/*.cpp", "server/**/*.h", "registry/**/*.cpp", "engine/**/*.cpp",
                "engine/**/*.h"):
    for path in glob.glob(os.path.join(src, pattern), recursive=True):
        sources += open(path, encoding="utf-8", errors="replace").read()
settings = set(re.findall(r'"((?:OLLAMA|VKLLM)_[A-Z0-9_]+)"', sources))
metrics = set(re.findall(r'declare\("(vkllm_[a-z_]+)"', sources))
default_port = re.search(r"default_port = (\d+);", sources)
assert default_port, "the default port is no longer spelled `default_port = N;`"
default_port = int(default_port.group(1))
check("VKLLM_PRELOAD" in settings and "VKLLM_INSECURE_REGISTRIES" in settings,
      "serve reads neither VKLLM_PRELOAD nor VKLLM_INSECURE_REGISTRIES")

# --- parse everything ---
docs = []
files = sorted(glob.glob(os.path.join(kdir, "*.yaml")))
check(len(files) >= 5, f"only {len(files)} manifests in deploy/kubernetes")
for path in files:
    with open(path, encoding="utf-8") as f:
        for d in yaml.safe_load_all(f):
            if d is None:
                continue
            name = os.path.basename(path)
            check(isinstance(d, dict) and "apiVersion" in d and "kind" in d,
                  f"{name}: a document without apiVersion/kind")
            if d["kind"] != "Kustomization":
                check(d.get("metadata", {}).get("name"), f"{name}: {d['kind']} without a name")
            docs.append((name, d))
api = {"Deployment": "apps/v1", "Service": "v1", "PodDisruptionBudget": "policy/v1",
       "HorizontalPodAutoscaler": "autoscaling/v2", "Job": "batch/v1",
       "Ingress": "networking.k8s.io/v1", "ConfigMap": "v1", "PersistentVolumeClaim": "v1",
       "Kustomization": "kustomize.config.k8s.io/v1beta1"}
for name, d in docs:
    check(d["kind"] in api, f"{name}: unexpected kind {d['kind']}")
    check(api.get(d["kind"]) == d["apiVersion"], f"{name}: {d['kind']} is {api.get(d['kind'])}, not {d['apiVersion']}")


def of(kind):
    return {d["metadata"]["name"]: d for _, d in docs if d["kind"] == kind}


deployments, services, jobs = of("Deployment"), of("Service"), of("Job")
check("vkllm" in deployments, "no Deployment named vkllm")
vk = deployments["vkllm"]
pod = vk["spec"]["template"]
labels = pod["metadata"]["labels"]
check(all(labels.get(k) == v for k, v in vk["spec"]["selector"]["matchLabels"].items()),
      "the Deployment's selector does not match its pod labels")
c = pod["spec"]["containers"][0]
check(c.get("args", [None])[0] == "serve", "the vkllm container does not run `serve`")
env = {e["name"]: e for e in c.get("env", [])}
ports = {p.get("name"): p["containerPort"] for p in c["ports"]}

# The port: OLLAMA_HOST's, the containerPort, the probes', the scrape annotation's.
host = env.get("OLLAMA_HOST", {}).get("value", "")
m = re.fullmatch(r"(?:\[[^\]]*\]|[^:]*)(?::(\d+))?", host)
listen_port = int(m.group(1)) if m and m.group(1) else default_port
check(host.startswith("0.0.0.0") or host.startswith("[::]") or host.startswith(":"),
      f"OLLAMA_HOST={host!r}: pods must listen on every interface (the default is loopback)")
check(ports.get("http") == listen_port, f"containerPort {ports.get('http')} != serve's port {listen_port}")


def port_of(p):
    return ports.get(p) if isinstance(p, str) else p


probe_paths = set()
for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/livez")):
    get = c.get(probe, {}).get("httpGet", {})
    check(get.get("path") == path, f"{probe} path {get.get('path')!r}, want {path}")
    check(port_of(get.get("port")) == listen_port, f"{probe} port {get.get('port')!r} is not {listen_port}")
    probe_paths.add(get.get("path"))
ann = pod["metadata"].get("annotations", {})
check(ann.get("prometheus.io/scrape") == "true", "no prometheus.io/scrape annotation")
check(int(ann.get("prometheus.io/port", 0)) == listen_port, "prometheus.io/port is not serve's port")
check(ann.get("prometheus.io/path") == "/metrics", "prometheus.io/path is not /metrics")
probe_paths.add("/metrics")
check("nvidia.com/gpu" in c.get("resources", {}).get("limits", {}), "no GPU in the container's limits")
check("graphics" in env.get("NVIDIA_DRIVER_CAPABILITIES", {}).get("value", ""),
      "NVIDIA_DRIVER_CAPABILITIES lacks graphics (the Vulkan ICD)")

# Drain: preStop, then the server's grace, inside the pod's termination grace.
pre = c.get("lifecycle", {}).get("preStop", {})
check(pre, "no preStop hook")
pre_s = pre.get("sleep", {}).get("seconds", 0)
grace = env.get("VKLLM_SHUTDOWN_GRACE", {}).get("value", "10")
check(re.fullmatch(r"\d+", grace), f"VKLLM_SHUTDOWN_GRACE={grace!r} is not whole seconds")
grace_s = int(grace) if grace.isdigit() else 0
tgps = pod["spec"].get("terminationGracePeriodSeconds", 30)
check(tgps > pre_s + grace_s, f"terminationGracePeriodSeconds {tgps} <= preStop {pre_s} + grace {grace_s}")

# Every setting a vkllm container sets is one the server reads; other names are used by the
# container's own command (or are the NVIDIA runtime's).
runtime_env = {"NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_VISIBLE_DEVICES"}
containers = [("Deployment vkllm", c)]
for jname, j in jobs.items():
    spec = j["spec"]["template"]["spec"]
    for cc in spec.get("initContainers", []) + spec["containers"]:
        containers.append((f"Job {jname}/{cc['name']}", cc))
for where, cc in containers:
    words = " ".join(cc.get("command", []) + cc.get("args", []))
    for e in cc.get("env", []):
        n = e["name"]
        if n.startswith(("OLLAMA_", "VKLLM_")):
            check(n in settings, f"{where}: {n} is not a setting vkllm reads")
        else:
            check(n in runtime_env or f"${n}" in words or f"$({n})" in words or f"${{{n}}}" in words,
                  f"{where}: {n} is used by nothing")

# The registry: the Job pushes where the replicas pull from, and that host is a Service.
preload = [m for m in env.get("VKLLM_PRELOAD", {}).get("value", "").split(",") if m]
check(preload, "the vkllm container preloads no model (VKLLM_PRELOAD)")
insecure = env.get("VKLLM_INSECURE_REGISTRIES", {}).get("value", "").split(",")
for model in preload:
    reg = model.split("/")[0]
    check(reg in insecure, f"the preload registry {reg} is not in VKLLM_INSECURE_REGISTRIES")
    svc, _, port = reg.partition(":")
    check(svc in services and any(p["port"] == int(port or 443) for p in services[svc]["spec"]["ports"]),
          f"no Service {svc} on port {port} for the registry")
pushed = set()
for jname, j in jobs.items():
    for cc in j["spec"]["template"]["spec"]["containers"]:
        for e in cc.get("env", []):
            if e["name"] == "MODEL":
                pushed.add(e["value"])
        if cc.get("image", "").startswith("vkllm"):
            check("vkllm push" in " ".join(cc.get("args", [])), f"Job {jname} does not run `vkllm push`")
check(set(preload) <= pushed, f"preloaded {preload} but the Jobs push {sorted(pushed)}")

# Services, the disruption budget, the autoscaler and the ingresses point at what exists.
for sname, s in services.items():
    sel = s["spec"]["selector"]
    targets = [d for d in deployments.values()
               if all(d["spec"]["template"]["metadata"]["labels"].get(k) == v for k, v in sel.items())]
    check(len(targets) == 1, f"Service {sname} selects {len(targets)} Deployments")
    for p in s["spec"]["ports"]:
        tc = targets[0]["spec"]["template"]["spec"]["containers"][0] if targets else {}
        names = {q.get("name"): q["containerPort"] for q in tc.get("ports", [])}
        tp = p.get("targetPort", p["port"])
        check(tp in names if isinstance(tp, str) else tp in names.values(),
              f"Service {sname} targets port {tp!r} its pods do not have")
for pname, p in of("PodDisruptionBudget").items():
    check(p["spec"]["selector"]["matchLabels"] == vk["spec"]["selector"]["matchLabels"],
          f"PodDisruptionBudget {pname} does not select the vkllm pods")
for hname, h in of("HorizontalPodAutoscaler").items():
    check(h["spec"]["scaleTargetRef"]["name"] in deployments, f"HPA {hname} scales nothing")
    for m in h["spec"]["metrics"]:
        name = m.get("pods", {}).get("metric", {}).get("name")
        check(name in metrics, f"HPA {hname} reads {name}, which vkllm does not export")
for iname, ing in of("Ingress").items():
    for rule in ing["spec"]["rules"]:
        for p in rule["http"]["paths"]:
            b = p["backend"]["service"]
            check(b["name"] in services, f"Ingress {iname} routes to a missing Service {b['name']}")
            sp = [q.get("name") for q in services.get(b["name"], {}).get("spec", {}).get("ports", [])]
            check(b["port"].get("name") in sp or b["port"].get("number"), f"Ingress {iname}: port {b['port']}")
            if p["path"] != "/":
                probe_paths.add(p["path"])

# The routes given affinity are the same in the Ingress, nginx's and HAProxy's configurations.
conv_ingress = of("Ingress").get("vkllm-conversations", {"spec": {"rules": []}})
conversation = {p["path"] for r in conv_ingress["spec"]["rules"] for p in r["http"]["paths"]}
check(conversation, "no Ingress vkllm-conversations")
for conf, pattern in (("deploy/nginx/vkllm.conf", r"location ~ \^/\(([^)]*)\)\$"),
                      ("deploy/haproxy/vkllm.cfg", r"acl conversation path -m reg \^/\(([^)]*)\)\$")):
    m = re.search(pattern, open(os.path.join(src, conf)).read())
    routes = {"/" + r for r in m.group(1).split("|")} if m else set()
    check(routes == conversation, f"{conf} gives affinity to {sorted(routes)}, the Ingress to {sorted(conversation)}")

kustom = [d for _, d in docs if d["kind"] == "Kustomization"]
if kustom:
    listed = set(kustom[0]["resources"])
    for path in files:
        b = os.path.basename(path)
        if b not in ("kustomization.yaml", "prometheus-adapter-rules.yaml"):
            check(b in listed, f"kustomization.yaml does not list {b}")

with open(probes_out, "w") as f:
    f.write("\n".join(sorted(probe_paths)) + "\n")
if problems:
    for p in problems:
        print("FAIL:", p, file=sys.stderr)
    sys.exit(1)
print(f"manifests: {len(docs)} documents in {len(files)} files parsed; port {listen_port}, probes, "
      f"settings ({len(settings)} known), registry, selectors and the HPA metric agree")
