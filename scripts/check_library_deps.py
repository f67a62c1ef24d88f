#!/usr/bin/env python3
"""Checks that every vkllm library declares the vkllm libraries it calls.

Reads the build's library_deps.txt (cmake/vkllm_module.cmake writes one line per static library:
"name archive dep,dep") and, with nm, fails if a library uses a vkllm symbol that neither it nor
the libraries it declares (transitively) define. Without the declaration such a library still
links wherever nothing pulls the calling object in; unity batches and -O0 change what is pulled.
"""
import subprocess
import sys


def symbols(archive, defined):
    args = ["nm", "--defined-only" if defined else "--undefined-only", archive]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    found = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2 or "5vkllm" not in parts[-1]:  # vkllm's namespace, mangled
            continue
        kind = parts[-2]
        if defined and (kind.isupper() or kind == "i") and kind != "U":
            found.add(parts[-1])
        elif not defined and kind == "U":
            found.add(parts[-1])
    return found


def main(path):
    libraries = {}
    for line in open(path):
        fields = line.split()
        if len(fields) >= 2:
            deps = fields[2].split(",") if len(fields) > 2 else []
            libraries[fields[0]] = (fields[1], [d for d in deps if d])
    defined = {name: symbols(archive, True) for name, (archive, _) in libraries.items()}

    def closure(name, seen):
        for dep in libraries[name][1]:
            if dep in libraries and dep not in seen:
                seen.add(dep)
                closure(dep, seen)
        return seen

    failed = False
    for name, (archive, _) in sorted(libraries.items()):
        available = set(defined[name])
        for dep in closure(name, set()):
            available |= defined[dep]
        missing = sorted(symbols(archive, False) - available)
        if missing:
            failed = True
            owners = sorted({other for other, syms in defined.items() for s in missing if s in syms})
            print(f"{name} uses {len(missing)} vkllm symbols its DEPS do not provide "
                  f"(defined in: {', '.join(owners) or 'no library'}), e.g.")
            for s in missing[:5]:
                demangled = subprocess.run(["c++filt", s], capture_output=True, text=True).stdout
                print("   ", demangled.strip())
    print(f"{len(libraries)} libraries checked: " + ("FAILED" if failed else "ok"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
