#!/usr/bin/env python3
"""Fails on an #include that breaks coda's layering (ARCHITECTURE.md, "Who may include whom").

Every include is rooted at the repository top (#include "arch/hardware_model.h"), so the first
path component names the folder it comes from, and the folder of the including file says what it
may use. CMake cannot state this by itself: every target sees the whole tree on its include path,
so a header-only use of a folder it does not link compiles and links fine.

    scripts/check_layering.py [ROOT]     # ROOT: the repository top (default: this script's ..)
    scripts/check_layering.py --self-test

Prints `path:line: error: <folder> may not include <target> (<rule>)` for each broken arrow and
exits 1; exits 0 when there is none. Standard library only (Debian 12's python3 and any >= 3.9).
"""

import os
import re
import sys
import tempfile

LIBRARIES = ("core", "arch", "workloads", "mapper", "sim", "dse", "validation", "reports", "cli")

# What each top-level folder may include, itself included: the CMake link graph (each folder's
# CMakeLists.txt), which states the design's arrows. A new folder needs its row: check() reports
# a folder of sources that has none.
ALLOWED = {
    "core": {"core"},
    "arch": {"core", "arch"},
    "workloads": {"core", "workloads"},
    "mapper": {"core", "arch", "workloads", "mapper"},
    "sim": {"core", "arch", "workloads", "mapper", "sim"},
    "dse": {"core", "arch", "workloads", "mapper", "sim", "dse"},
    "validation": {"core", "arch", "workloads", "mapper", "sim", "validation"},
    "reports": {"core", "reports"},
    "cli": set(LIBRARIES),
    "bench": set(LIBRARIES) | {"bench"},
    # Test helpers (header-only). What a helper includes is checked again against every test that
    # includes it (see transitive_folders), so a helper cannot smuggle arch/ into workloads' tests.
    "testing": set(LIBRARIES) | {"testing"},
    # Cross-cutting tests: everything.
    "tests": set(LIBRARIES) | {"testing", "tests"},
    "fuzz": set(LIBRARIES) - {"cli"} | {"fuzz"},
    # The Python API's C++ module: the libraries, and the CLI's entry point (coda.serve, .train
    # and .report run the command in-process).
    "python": set(LIBRARIES) | {"python"},
}

RULES = {
    "core": "core includes only core",
    "arch": "arch depends on core only",
    "workloads": "workloads depends on core only",
    "mapper": "mapper depends on core, arch and workloads",
    "sim": "sim depends on core, arch, workloads and mapper",
    "dse": "dse depends on core, arch, workloads, mapper and sim",
    "validation": "validation depends on core, arch, workloads, mapper and sim",
    "reports": "reports depends on core only",
    "cli": "cli depends on the libraries, not on test code",
    "bench": "bench depends on the libraries, not on test code",
    "python": "python depends on the libraries and cli, not on test code",
    "testing": "test helpers depend on the libraries",
    "tests": "cross-cutting tests depend on the libraries and testing/",
    "fuzz": "fuzz targets depend on the libraries below cli",
}

# Sub-folders that are libraries of their own, which the rest of their folder does not link: who
# else may include them (sim/CMakeLists.txt, cli/CMakeLists.txt). workloads/onnx/ is not listed:
# its users guard the include with #if CODA_WITH_ONNX, and scripts/build_minimal.sh builds
# without it.
SUBLIBRARIES = {
    "sim/systemc": ("coda::sim_systemc", {"cli", "bench", "tests"}),
    "dse/mpi": ("coda::dse_mpi", {"cli", "bench", "tests"}),
}

SOURCE_SUFFIXES = (".h", ".cpp", ".cu", ".cuh")
QUOTED = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
ANGLED = re.compile(r"^\s*#\s*include\s*<([^>]+)>")
SYSTEMC = re.compile(r"^(systemc|systemc\.h|tlm|tlm\.h|tlm_utils/.*)$")
CUDA = re.compile(r"^(cuda\.h|cuda_runtime\.h|cuda_.*|cublas.*\.h|cudnn.*\.h|mma\.h)$")
# The optional dependencies (CODA_WITH_ONNX, CODA_WITH_MPI): only the target that links each may
# see its headers, so turning it off removes every use (scripts/build_minimal.sh builds that).
ONNX = re.compile(r"^onnx/")
MPI = re.compile(r"^mpi\.h$")


def owner(rel):
    """(top folder, is test code) for a path relative to the root, e.g. sim/systemc/tests/x.cpp
    -> ("sim", True). A folder's tests/ at any depth may include what the folder may, plus
    testing/."""
    parts = rel.split("/")
    return parts[0], "tests" in parts[1:-1]


def allowed_for(rel):
    top, is_test = owner(rel)
    allowed = set(ALLOWED[top])
    if is_test:
        allowed.add("testing")
    return allowed


def rule_for(rel):
    top, is_test = owner(rel)
    return RULES[top] + ("; its tests may add testing/" if is_test else "")


def includes(path):
    """(line number, kind, target) for each #include of a file; kind is '"' or '<'."""
    found = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            m = QUOTED.match(line)
            if m:
                found.append((number, '"', m.group(1)))
                continue
            m = ANGLED.match(line)
            if m:
                found.append((number, "<", m.group(1)))
    return found


def sources(root):
    for top in sorted(ALLOWED):
        base = os.path.join(root, top)
        for dirpath, dirnames, filenames in os.walk(base):
            # Build trees (build/, build-asan/, ...) hold generated copies, not sources.
            dirnames[:] = sorted(d for d in dirnames
                                 if not d.startswith("build") and not d.startswith("."))
            for name in sorted(filenames):
                if name.endswith(SOURCE_SUFFIXES):
                    yield os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")


def transitive_folders(root, header, seen=None):
    """{folder: (header, line)} for every repo folder a testing/ header reaches through its
    includes, following testing/ -> testing/ includes."""
    seen = set() if seen is None else seen
    if header in seen or not os.path.isfile(os.path.join(root, header)):
        return {}
    seen.add(header)
    reached = {}
    for number, kind, target in includes(os.path.join(root, header)):
        folder = target.split("/", 1)[0] if kind == '"' and "/" in target else None
        if folder not in ALLOWED:
            continue
        if folder == "testing":
            for f, where in transitive_folders(root, target, seen).items():
                reached.setdefault(f, where)
        else:
            reached.setdefault(folder, (header, number))
    return reached


def unmapped_folders(root):
    """Top-level folders holding C++ sources that ALLOWED has no row for (their includes would go
    unchecked)."""
    found = []
    for top in sorted(os.listdir(root)):
        base = os.path.join(root, top)
        if top in ALLOWED or top.startswith((".", "build")) or not os.path.isdir(base):
            continue
        for _, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if not d.startswith(("build", "."))]
            if any(name.endswith(SOURCE_SUFFIXES) for name in filenames):
                found.append(top)
                break
    return found


def check(root):
    errors = [f"{top}/: error: no layering rule for this folder (add its row to ALLOWED in "
              "scripts/check_layering.py and to ARCHITECTURE.md)" for top in unmapped_folders(root)]
    for rel in sources(root):
        top, _ = owner(rel)
        allowed = allowed_for(rel)
        for number, kind, target in includes(os.path.join(root, rel)):
            where = f"{rel}:{number}: error: "
            if kind == "<":
                if SYSTEMC.match(target) and not rel.startswith("sim/systemc/"):
                    errors.append(f"{where}{top} may not include <{target}> "
                                  "(SystemC headers stay inside sim/systemc/)")
                elif CUDA.match(target) and top != "validation":
                    errors.append(f"{where}{top} may not include <{target}> "
                                  "(CUDA stays inside validation/)")
                elif ONNX.match(target) and not rel.startswith("workloads/onnx/"):
                    errors.append(f"{where}{top} may not include <{target}> "
                                  "(ONNX headers stay inside workloads/onnx/)")
                elif MPI.match(target) and not rel.startswith("dse/mpi/"):
                    errors.append(f"{where}{top} may not include <{target}> "
                                  "(MPI stays inside dse/mpi/, which links it)")
                continue
            if target.startswith("../") or "/../" in target:
                errors.append(f"{where}{top} may not include \"{target}\" "
                              "(includes are rooted at the repository top)")
                continue
            folder = target.split("/", 1)[0] if "/" in target else None
            if folder not in ALLOWED:
                continue  # a third-party header written with quotes, or a same-folder name
            if folder not in allowed:
                errors.append(f"{where}{top} may not include {folder} ({rule_for(rel)})")
                continue
            sub = next((s for s in SUBLIBRARIES if target.startswith(s + "/")), None)
            if sub and not rel.startswith(sub + "/") and top not in SUBLIBRARIES[sub][1]:
                target_name, users = SUBLIBRARIES[sub]
                errors.append(f"{where}{top} may not include {sub} ({target_name} is its own "
                              f"library; only {', '.join(sorted(users))} link it)")
            elif folder == "testing":
                for reached, (header, line) in sorted(transitive_folders(root, target).items()):
                    if reached not in allowed:
                        errors.append(f"{where}{top} may not include {reached} through "
                                      f"{header}:{line} ({rule_for(rel)})")
    return errors


def self_test():
    """The checker flags known-bad includes in a throwaway tree and passes a good one."""
    cases = {
        "arch/bad.h": '#include "core/units.h"\n#include "workloads/graph.h"\n',
        "workloads/tests/bad_test.cpp": '#include "testing/test_hardware.h"\n',
        "testing/test_hardware.h": '#include "arch/hardware_model.h"\n',
        "mapper/tests/good_test.cpp": '#include "testing/test_hardware.h"\n',
        "reports/bad.cpp": '#include "sim/driver.h"\n',
        "cli/bad.cpp": "#include <systemc>\n#include <cuda_runtime.h>\n",
        "sim/systemc/good.cpp": "#include <systemc>\n#include <tlm_utils/simple_target_socket.h>\n",
        "validation/kernels/good.cu": "#include <cuda_runtime.h>\n#include <mma.h>\n",
        "sim/build/ignored.cpp": '#include "cli/commands.h"\n',
        "newlib/x.cpp": '#include "core/units.h"\n',
        "dse/sweep.cpp": '#include "sim/driver.h"\n#include "reports/pareto.h"\n',
        "sim/driver.cpp": '#include "sim/systemc/systemc_engine.h"\n',
        "cli/good.cpp": '#include "sim/systemc/systemc_engine.h"\n#include "dse/mpi/sweep_mpi.h"\n',
        "cli/mpi.cpp": "#include <mpi.h>\n",
        "dse/mpi/good.cpp": '#include <mpi.h>\n#include "dse/sweep.h"\n',
        "dse/sweep_store.cpp": '#include "dse/mpi/sweep_mpi.h"\n',
        "workloads/load.cpp": "#include <onnx/onnx_pb.h>\n",
    }
    expected = [
        "newlib/: error: no layering rule for this folder (add its row to ALLOWED in "
        "scripts/check_layering.py and to ARCHITECTURE.md)",
        "arch/bad.h:2: error: arch may not include workloads (arch depends on core only)",
        "cli/bad.cpp:1: error: cli may not include <systemc> "
        "(SystemC headers stay inside sim/systemc/)",
        "cli/bad.cpp:2: error: cli may not include <cuda_runtime.h> "
        "(CUDA stays inside validation/)",
        "cli/mpi.cpp:1: error: cli may not include <mpi.h> "
        "(MPI stays inside dse/mpi/, which links it)",
        "dse/sweep.cpp:2: error: dse may not include reports "
        "(dse depends on core, arch, workloads, mapper and sim)",
        "dse/sweep_store.cpp:1: error: dse may not include dse/mpi (coda::dse_mpi is its own "
        "library; only bench, cli, tests link it)",
        "reports/bad.cpp:1: error: reports may not include sim (reports depends on core only)",
        "sim/driver.cpp:1: error: sim may not include sim/systemc (coda::sim_systemc is its own "
        "library; only bench, cli, tests link it)",
        "workloads/load.cpp:1: error: workloads may not include <onnx/onnx_pb.h> "
        "(ONNX headers stay inside workloads/onnx/)",
        "workloads/tests/bad_test.cpp:1: error: workloads may not include arch through "
        "testing/test_hardware.h:1 (workloads depends on core only; its tests may add testing/)",
    ]
    with tempfile.TemporaryDirectory() as root:
        for rel, text in cases.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                f.write(text)
        got = check(root)
    if got != expected:
        print("check_layering.py --self-test: FAILED", file=sys.stderr)
        print("expected:\n  " + "\n  ".join(expected), file=sys.stderr)
        print("got:\n  " + "\n  ".join(got), file=sys.stderr)
        return 1
    print(f"check_layering.py --self-test: {len(expected)} known-bad cases flagged, "
          "good ones passed")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith("-")):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = argv[1] if len(argv) == 2 else os.path.join(os.path.dirname(__file__), "..")
    if not os.path.isdir(os.path.join(root, "core")):
        print(f"check_layering.py: {root} is not coda's repository top (no core/)", file=sys.stderr)
        return 2
    errors = check(root)
    for e in errors:
        print(e)
    if errors:
        print(f"check_layering.py: {len(errors)} include(s) break the layering "
              "(ARCHITECTURE.md, \"Who may include whom\")")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
