#!/usr/bin/env python3
"""The build enforces the layer picture of docs/ARCHITECTURE.md.

For one source file of every folder under src/, its real compile command (from
compile_commands.json) is run on a probe that includes one public header of each layer:
the probe must compile exactly when that layer is the folder's own or one it may use.
A folder that could include an upper layer's header -- or could no longer include an allowed
one -- fails the test. Usage: check_layers.py BUILD_DIR SOURCE_DIR
"""
import json
import os
import shlex
import subprocess
import sys
import tempfile

# folder -> the public header directories (include/lbbox/<dir>) it may include
BASE = {"base"}
ALLOWED = {
    "base": BASE,
    "sandbox": BASE | {"sandbox"},
    "image": BASE | {"image"},
    "imagetool": BASE | {"image"},
    "skilltool": BASE | {"sandbox", "image", "spec", "box", "rpc"},
    "spec": BASE | {"sandbox", "image", "spec"},
    "box": BASE | {"sandbox", "image", "spec", "box"},
    "rpc": BASE | {"sandbox", "image", "spec", "box", "rpc"},
    "server": BASE | {"sandbox", "image", "spec", "box", "rpc"},
    "oci": BASE | {"sandbox", "oci"},
    "cli": BASE | {"sandbox", "image", "spec", "box", "rpc", "oci"},
    "init": set(),
}


def one_header(src, d):
    names = sorted(n for n in os.listdir(os.path.join(src, "include/lbbox", d)) if n.endswith(".h"))
    return f"lbbox/{d}/{names[0]}"


def probe_compiles(entry, header, tmp):
    args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    probe = os.path.join(tmp, "probe.c")
    with open(probe, "w") as f:
        f.write(f'#include "{header}"\nint lbbox_layer_probe;\n')
    out, cmd = [], []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-o", "-c"):
            skip = True
            continue
        if a == entry["file"]:
            continue
        cmd.append(a)
    cmd += ["-fsyntax-only", probe]
    r = subprocess.run(cmd, cwd=entry["directory"], capture_output=True, text=True)
    return r.returncode == 0


def main():
    build, src = sys.argv[1], sys.argv[2]
    entries = json.load(open(os.path.join(build, "compile_commands.json")))
    dirs = sorted(d for d in os.listdir(os.path.join(src, "include/lbbox")))
    seen, failures = {}, []
    for e in entries:
        rel = os.path.relpath(e["file"], src)
        parts = rel.split(os.sep)
        if len(parts) == 3 and parts[0] == "src" and parts[1] not in seen:
            seen[parts[1]] = e
    missing = set(ALLOWED) - set(seen)
    if missing:
        failures.append(f"no compile command for src/{sorted(missing)}")
    with tempfile.TemporaryDirectory() as tmp:
        for folder, e in sorted(seen.items()):
            if folder not in ALLOWED:
                failures.append(f"src/{folder}: not in the layer picture (tests/build/check_layers.py)")
                continue
            for d in dirs:
                want = d in ALLOWED[folder]
                got = probe_compiles(e, one_header(src, d), tmp)
                if got != want:
                    failures.append(f"src/{folder} {'can' if got else 'cannot'} include lbbox/{d}/")
            print(f"src/{folder}: may include {', '.join(sorted(ALLOWED[folder])) or 'no lbbox header'}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
