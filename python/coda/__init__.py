"""coda's Python API: load and edit an arch, build or import a workload, run, map, sweep and
validate, from a notebook or a script (docs/python.md).

    import coda
    h100 = coda.Arch.load("configs/arch/nvidia_h100_sxm.yaml")
    decode = coda.Workload.llm("configs/workloads/llm/llama2_7b.yaml", phase="decode",
                               batch=8, seq=2048)
    run = coda.run(h100.with_values({"dram.bandwidth": "4.8 TB/s"}), decode, precision="bf16")
    run.seconds, run.layers_df()

It calls the same C++ code as the `coda` command (the module coda._coda), so a result here equals
the command's: coda.run gives run.json's content, coda.sweep a sweep's results.json, coda.validate
`coda validate --corpus`'s corpus.json. Results are plain dicts and lists; the *_df() methods give
pandas DataFrames when pandas is installed (Debian: python3-pandas). Bad input raises CodaError,
which carries every located diagnostic (file, line, column, path, message, hint).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional

from . import _coda

__version__ = _coda.version
__all__ = ["Arch", "CodaError", "CommandResult", "Diagnostic", "MapResult", "RunResult",
           "ServeResult", "SweepResult", "ValidationResult", "Workload", "command", "map",
           "report", "run", "serve", "sweep", "train", "validate"]


@dataclass(frozen=True)
class Diagnostic:
    """One problem coda found: where it is (file, line, column; 0 when not from a file), the
    config path ("dram.bandwidth", "llm.phase"), what is wrong and what would be valid."""
    severity: str
    file: str
    line: int
    column: int
    path: str
    message: str
    hint: str
    text: str  # the line the command prints: "file:line:col: error: path: message; hint"

    def __str__(self) -> str:
        return self.text


class CodaError(Exception):
    """A call coda could not do; `diagnostics` lists every problem found, located."""

    def __init__(self, message: str, diagnostics: Iterable[Diagnostic] = ()):
        self.diagnostics = list(diagnostics)
        self.message = message
        text = "\n".join(d.text for d in self.diagnostics) if self.diagnostics else message
        super().__init__(text)


def _unwrap(envelope: str) -> Any:
    reply = json.loads(envelope)
    if reply["ok"]:
        return reply["value"]
    raise CodaError(reply["message"], [Diagnostic(**d) for d in reply["diagnostics"]])


def _frame(rows: list, what: str):
    try:
        import pandas
    except ImportError as e:
        raise ImportError(f"{what} needs pandas (Debian: apt-get install python3-pandas); the "
                          "same rows are there as a list of dicts without it") from e
    return pandas.DataFrame(rows)


def _number(value: Any) -> Any:
    """An int or a float where the text is one ("64", "0.5"), else the value as it was."""
    if not isinstance(value, str):
        return value
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def _csv_rows(text: str) -> list:
    """A CSV's rows as dicts, numbers as numbers."""
    return [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(io.StringIO(text))]


def _yaml_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class Arch:
    """An arch config, read and validated (extends: resolved). Immutable: with_values returns an
    edited copy, validated as `coda run` would validate the file."""

    def __init__(self, doc: "_coda.ArchDoc", edited: bool = False):
        self._doc = doc
        self._edited = edited

    @classmethod
    def load(cls, path: "os.PathLike[str] | str") -> "Arch":
        doc, envelope = _coda.load_arch(os.fspath(path))
        _unwrap(envelope)
        return cls(doc)

    @property
    def label(self) -> str:
        """The file it came from, and the values set since."""
        return self._doc.label

    def summary(self) -> dict:
        """name, description, compute (one line), clock_hz, content_hash, files."""
        return _unwrap(self._doc.summary())

    @property
    def name(self) -> str:
        return self.summary()["name"]

    def get(self, path: str) -> str:
        """The value at a dotted path, as written: arch.get("dram.bandwidth") -> "3.35 TB/s"."""
        return _unwrap(self._doc.get(path))

    __getitem__ = get

    def with_values(self, values: Optional[Mapping[str, Any]] = None, **more: Any) -> "Arch":
        """A copy with the values at these paths set (as a sweep's axes set them; a path names
        one value, e.g. "compute[0].array.rows" or "dram.bandwidth"), validated. Keyword
        arguments take paths without dots: with_values(clock="1.5 GHz")."""
        pairs = [(str(k), _yaml_scalar(v)) for k, v in {**dict(values or {}), **more}.items()]
        doc, envelope = self._doc.with_values(pairs)
        _unwrap(envelope)
        return Arch(doc, edited=True)

    def to_yaml(self) -> str:
        """The whole arch as YAML (extends: resolved), which `coda run --arch` loads."""
        return self._doc.text()

    def save(self, path: "os.PathLike[str] | str") -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_yaml())

    def __repr__(self) -> str:
        return f"coda.Arch({self.label!r})"


class Workload:
    """A workload: a file (layer list .yaml, SCALE-Sim .csv, trace .json, ONNX .onnx), an LLM for
    one phase and layout, or a CNN of the zoo. It is described here and built by each call (the
    same keys as a sweep spec's workload entry, docs/sweeps.md)."""

    def __init__(self, entry: Mapping[str, Any], base: Optional[str] = None):
        self.entry = {k: v for k, v in entry.items() if v is not None}
        self.base = base or os.getcwd()

    @classmethod
    def file(cls, path: "os.PathLike[str] | str", *, bind: Optional[Mapping[str, int]] = None,
             skip_unsupported: Optional[bool] = None, fuse_attention: Optional[bool] = None,
             fuse_functions: Optional[bool] = None, dtype: Optional[str] = None) -> "Workload":
        """dtype: an ONNX model's floating-point tensors in this type (quantized integer weights
        keep theirs)."""
        return cls({"file": os.path.abspath(os.fspath(path)), "bind": dict(bind) if bind else None,
                    "skip_unsupported": skip_unsupported, "fuse_attention": fuse_attention,
                    "fuse_functions": fuse_functions, "dtype": dtype})

    @classmethod
    def llm(cls, config: "os.PathLike[str] | str", *, phase: str, **options: Any) -> "Workload":
        """An LLM from a coda model YAML or a Hugging Face config.json. Options as a sweep's
        llm entry: batch, seq, dtype, tp, pp, dp, stage, micro_batches, recompute,
        sequence_parallel, cp, ep, train_precision, quant, kv_dtype."""
        return cls({"llm": os.path.abspath(os.fspath(config)), "phase": phase, **options})

    @classmethod
    def cnn(cls, name: str, *, batch: int = 1, image: Optional[int] = None,
            dtype: Optional[str] = None) -> "Workload":
        return cls({"cnn": name, "batch": batch, "image": image, "dtype": dtype})

    def _text(self) -> str:
        return json.dumps(self.entry)  # JSON is YAML

    def summary(self) -> dict:
        """What `coda workload` prints: ops, tensors, parameters, MACs, FLOPs, bytes, arithmetic
        intensity, per op kind (by_kind); plus describe, notes and op_list (name, kind)."""
        return _unwrap(_coda.workload_summary(self._text(), self.base))

    def ops_df(self):
        return _frame(self.summary()["op_list"], "Workload.ops_df()")

    def __repr__(self) -> str:
        return f"coda.Workload({self.entry!r})"


@dataclass
class RunResult:
    """One run: `data` is run.json's content; layers are layers.csv's rows."""
    data: dict
    layers_csv: str
    seconds: float  # the run's time, host waits included (what `coda run` reports)
    workload_notes: list = field(default_factory=list)

    @property
    def ops(self) -> list:
        return self.data["ops"]

    def layers(self) -> list:
        """layers.csv as dicts, numbers as numbers."""
        return _csv_rows(self.layers_csv)

    def layers_df(self):
        return _frame(self.layers(), "RunResult.layers_df()")

    def save(self, folder: "os.PathLike[str] | str") -> None:
        """Writes run.json and layers.csv, as `coda run --out` does (`coda report` reads them)."""
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "run.json"), "w", encoding="utf-8") as f:
            json.dump(self.data, f, indent=2)
            f.write("\n")
        with open(os.path.join(folder, "layers.csv"), "w", encoding="utf-8") as f:
            f.write(self.layers_csv)


def run(arch: Arch, workload: Workload, *, precision: Optional[str] = None,
        fusion: Optional[str] = None, attention: Optional[str] = None,
        decode_attention: Optional[str] = None, launch: Optional[str] = None,
        skip_unsupported: bool = False, search: Optional[Mapping[str, Any]] = None,
        engine: Optional[str] = None) -> RunResult:
    """`coda run` on the analytical engine. precision: int8, fp8, fp16, bf16, ...; fusion: none,
    epilogue, all (default: the arch's calibration.fusion); attention: fa2, fa3, triton;
    decode_attention: grouped, per_head, fa2_forward; launch: graph or eager; search: a loop-nest mapping
    search per contraction, e.g. {"objective": "energy", "strategy": "heuristic",
    "evaluations": 20000, "seed": 1} ({} for the defaults)."""
    options = {"precision": precision, "fusion": fusion, "attention": attention,
               "decode_attention": decode_attention, "launch": launch, "engine": engine,
               "skip_unsupported": skip_unsupported}
    if search is not None:
        options["search"] = dict(search)
    value = _unwrap(_coda.run(arch._doc, workload._text(), workload.base, json.dumps(options)))
    return RunResult(value["run"], value["layers_csv"], value["run_time_seconds"],
                     value["workload_notes"])


class MapResult(list):
    """`coda map`: one dict per contraction (op, mapped, cycles, seconds, energy_j, utilization,
    evaluated, valid, cached; why when not mapped)."""

    def df(self):
        return _frame(list(self), "MapResult.df()")


def map(arch: Arch, workload: Workload, *, precision: Optional[str] = None) -> MapResult:  # noqa: A001
    """The loop-nest mapper's best mapping of every contraction (`coda map`)."""
    return MapResult(_unwrap(_coda.map(arch._doc, workload._text(), workload.base,
                                       precision or "")))


@dataclass
class SweepResult:
    """A sweep: `results` is results.json's content (sweep, spec_hash, axes, objectives,
    constraints, results: one dict per point and workload), `csv` results.csv's text."""
    results: dict
    csv: str
    outcome: dict  # points, already_done, ran, infeasible, seconds
    folder: Optional[str] = None

    @property
    def rows(self) -> list:
        return self.results["results"]

    def results_df(self):
        """One row per point and workload: the axes, metrics and constraint verdicts as columns
        (flattened); axis values that are numbers ("64") as numbers, the rest as written."""
        flat = []
        for row in self.rows:
            item = {k: v for k, v in row.items() if not isinstance(v, dict)}
            item.update({k: _number(v) for k, v in row["values"].items()})
            for k, v in row.items():
                if isinstance(v, dict) and k != "values":
                    item.update(v)
            flat.append(item)
        return _frame(flat, "SweepResult.results_df()")


def sweep(spec: "os.PathLike[str] | str", *, out: "os.PathLike[str] | str | None" = None,
          threads: int = 0) -> SweepResult:
    """`coda sweep`: every point of the spec on every workload. With `out`, the points are stored
    in out/sweep.db as they finish (a sweep stopped half-way resumes on the next call, and one
    already done runs no point) and results.csv and results.json are written there, for
    `coda report`; without it, in a temporary store. threads: 0 for every core."""
    spec = os.fspath(spec)
    if out is None:
        with tempfile.TemporaryDirectory(prefix="coda-sweep-") as folder:
            value = _unwrap(_coda.sweep(spec, os.path.join(folder, "sweep.db"), threads))
        return SweepResult(value["results"], value["csv"], value["outcome"])
    folder = os.fspath(out)
    os.makedirs(folder, exist_ok=True)
    value = _unwrap(_coda.sweep(spec, os.path.join(folder, "sweep.db"), threads))
    with open(os.path.join(folder, "results.json"), "w", encoding="utf-8") as f:
        json.dump(value["results"], f, indent=2)
        f.write("\n")
    with open(os.path.join(folder, "results.csv"), "w", encoding="utf-8") as f:
        f.write(value["csv"])
    return SweepResult(value["results"], value["csv"], value["outcome"], folder)


@dataclass
class ValidationResult:
    """`coda validate --corpus`: `report` is corpus.json's content, `text` the tables printed."""
    report: dict
    text: str

    @property
    def rows(self) -> list:
        return self.report["rows"]

    def rows_df(self):
        return _frame(self.rows, "ValidationResult.rows_df()")


def validate(corpus: "os.PathLike[str] | str", *, fit: bool = False) -> ValidationResult:
    """Prices every row of a published-measurement corpus (validation/published/corpus.yaml) and
    compares; fit=True also fits the calibration knobs on the calibration split."""
    value = _unwrap(_coda.validate(os.fspath(corpus), fit))
    return ValidationResult(value["report"], value["text"])


# ---- the commands with many options, run in this process ---------------------------------------

_LOCATED = re.compile(r"^(?P<file>.*?):(?P<line>\d+):(?P<column>\d+): (?P<severity>error|warning): "
                      r"(?P<rest>.*)$")
_UNLOCATED = re.compile(r"^(?:(?P<file>[^:]*): )?(?P<severity>error|warning): (?P<rest>.*)$")


def _parse_diagnostics(stderr: str) -> list:
    """The command's "file:line:col: error: path: message; hint" lines as Diagnostics."""
    found = []
    for line in stderr.splitlines():
        m = _LOCATED.match(line) or _UNLOCATED.match(line)
        if not m:
            continue
        parts = m.groupdict()
        rest = parts["rest"]
        path, _, message = rest.partition(": ") if ": " in rest else ("", "", rest)
        message, _, hint = message.partition("; ")
        found.append(Diagnostic(parts["severity"], parts.get("file") or "",
                                int(parts.get("line") or 0), int(parts.get("column") or 0),
                                path, message, hint, line))
    return found


@dataclass
class CommandResult:
    """What `coda ARGS` printed, and its exit status (0: it succeeded)."""
    returncode: int
    stdout: str
    stderr: str


def command(*args: Any, check: bool = True) -> CommandResult:
    """Runs `coda ARGS...` in this process (`coda --help` lists the commands). With check (the
    default), a non-zero exit raises CodaError with the diagnostics it printed."""
    status, out, err = _coda.command([os.fspath(a) if isinstance(a, os.PathLike) else str(a)
                                      for a in args])
    if check and status != 0:
        raise CodaError(err.strip() or f"coda exited with status {status}",
                        _parse_diagnostics(err))
    return CommandResult(status, out, err)


def _option_args(options: Mapping[str, Any]) -> list:
    """Keyword arguments as command-line options: slo_ttft=2000 -> --slo-ttft 2000; True -> the
    flag alone; False and None -> left out; a list or tuple -> comma-separated."""
    args = []
    for key, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            args += [flag, ",".join(str(v) for v in value)]
        else:
            args += [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
    return args


def _arch_file(arch: "Arch | os.PathLike[str] | str", folder: str) -> str:
    """A path the command can read: the file an unedited Arch came from, or an edited one saved
    (whole, extends: resolved) into `folder`."""
    if isinstance(arch, Arch):
        if not arch._edited:
            return arch.label
        path = os.path.join(folder, "arch.yaml")
        arch.save(path)
        return path
    return os.fspath(arch)


def _read_csv(path: str) -> list:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8", newline="") as f:
        return _csv_rows(f.read())


@dataclass
class ServeResult:
    """`coda serve --out`: `serve` is serve.json's content (config, summary, latencies, KV cache,
    or the rate curve / search); requests, iterations and deployments the CSVs it wrote."""
    serve: dict
    requests: list
    iterations: list
    deployments: list
    stdout: str
    folder: Optional[str] = None

    def requests_df(self):
        return _frame(self.requests, "ServeResult.requests_df()")

    def iterations_df(self):
        return _frame(self.iterations, "ServeResult.iterations_df()")

    def deployments_df(self):
        return _frame(self.deployments, "ServeResult.deployments_df()")


def serve(arch: "Arch | os.PathLike[str] | str", *, llm: "os.PathLike[str] | str",
          out: "os.PathLike[str] | str | None" = None, **options: Any) -> ServeResult:
    """`coda serve` (docs/serving.md): an LLM served under a request stream. Options as the
    command's, with underscores: rate=8, requests=2000, input_len="lognormal:512:0.8:16:4000",
    slo_ttft=2000, slo_tpot=100, tp=2, runtime="tensorrt_llm", rates=[2, 4, 8],
    search_rate=True, ... With `out`, the files stay there; without, in a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="coda-serve-") as scratch:
        folder = os.fspath(out) if out is not None else os.path.join(scratch, "serve")
        done = command("serve", "--arch", _arch_file(arch, scratch), "--llm", os.fspath(llm),
                       *_option_args(options), "--out", folder)
        serve_json = os.path.join(folder, "serve.json")
        data = {}
        if os.path.exists(serve_json):
            with open(serve_json, encoding="utf-8") as f:
                data = json.load(f)
        return ServeResult(data, _read_csv(os.path.join(folder, "requests.csv")),
                           _read_csv(os.path.join(folder, "iterations.csv")),
                           _read_csv(os.path.join(folder, "deployments.csv")), done.stdout,
                           folder if out is not None else None)


def train(arch: "Arch | os.PathLike[str] | str | None" = None, *, llm: "os.PathLike[str] | str",
          seq: int, cluster: "os.PathLike[str] | str | None" = None, **options: Any) -> dict:
    """`coda train --json` (docs/training.md): one training step (time, MFU, memory per chip),
    or with search_layouts=True, chips=N, global_batch=B every parallel layout ranked. Give an
    arch (one chip's) or a cluster file. Options as the command's: tp, cp, ep, pp, dp,
    micro_batch_size, global_batch, recompute, recompute_layers, zero, train_precision
    ("mixed", "fp8", ...), search_cp, search_ep, ..."""
    with tempfile.TemporaryDirectory(prefix="coda-train-") as scratch:
        where = (["--cluster", os.fspath(cluster)] if cluster is not None
                 else ["--arch", _arch_file(arch, scratch)])
        report_file = os.path.join(scratch, "train.json")
        command("train", *where, "--llm", os.fspath(llm), "--seq", str(seq),
                *_option_args(options), "--json", report_file)
        with open(report_file, encoding="utf-8") as f:
            return json.load(f)


def report(*results: "os.PathLike[str] | str", out: "os.PathLike[str] | str") -> str:
    """`coda report` (docs/report.md) on sweep folders, run.json files (RunResult.save),
    `coda train --json` files and serve folders; returns the path of report.html."""
    command("report", *results, "--out", out)
    return os.path.join(os.fspath(out), "report.html")
