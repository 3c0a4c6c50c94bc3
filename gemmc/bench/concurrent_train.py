"""The concurrency predictor's data and fit (paper 004 §4.2-§4.3), for the GPU it runs on.

    python -m gemmc.bench concurrent_train measure [--budget 150] [--dtype bf16]  # GPU: GO-kernel tuning of the set
    python -m gemmc.bench concurrent_train fit bench/results/concurrent_train/<date>_<gpu>.json [--write]

`measure` tunes the GO-kernels (gemmc.runtime.concurrent.go_tune: candidates alone on 1, 1/2, 1/4 of the SMs
through green contexts, then 2, 4, 8, 16 concurrent copies of the finalists, each reading its own A and B) of every
GEMM of paper 004's Table 3 set (gemmc.concurrent.table3) up to MAX_FLOPS, networks interleaved so that a run cut
short by `--budget` still covers them all, and writes each GEMM's features and speedups
S(d) = d x T_alone / makespan(d).

`fit` finds each GEMM's oracle degree, that of the largest speedup or 1S where none reaches MIN_GAIN (the paper's
oracle rule), and its right answers: every degree whose speedup comes within 5% of the oracle's (`acceptable`).
It trains the softmax regression (gemmc.concurrent.predictor.fit) on every network but HELD_OUT against equal
weights on the right answers, not the oracle's class alone: where several degrees tie within the timing noise, the
single best is a coin toss that a linear model cannot learn (trained on it, the f32 model left 11-13% of the GEMMs of
a network it had not seen more than 5% from the oracle, the bf16 one 25-32%). It reports accuracy, how close the
predicted degree's speedup comes to the oracle's, on the held-out networks and with each network left out in turn,
and the same for a constant degree (a baseline the model must beat), and with
`--write` stores the model in gemmc/concurrent/data/predictor_<arch>.json (f32 storage) or
predictor_<arch>_half.json (bf16 storage: the hopper family's kernels) with the rows it was trained on.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path
from statistics import geometric_mean

import numpy as np

from gemmc.bench import harness
from gemmc.concurrent import predictor
from gemmc.concurrent.features import FEATURE_NAMES
from gemmc.concurrent.table3 import gemm_set, schedule
from gemmc.ir.group import DEGREES

MAX_FLOPS = 2**34  # 17.2 GFLOP: about 0.4 ms alone in f32; 16 copies of larger ones take too long to time here
MIN_GAIN = 1.05  # a degree must beat sequential by 5% (paper 004 §5.5's oracle rule)
CLOSE = 0.95  # a degree within 5% of the oracle's speedup is a right answer (the measure of the predictor)
HELD_OUT = ("bert", "ds2")  # whole networks left out of training (the paper's random split leaks shapes)


def interleaved(gemms: list) -> list:
    by_app: dict[str, list] = defaultdict(list)
    for g in gemms:
        by_app[g.app].append(g)
    out: list = []
    i = 0
    while len(out) < len(gemms):
        for app in by_app:
            if i < len(by_app[app]):
                out.append(by_app[app][i])
        i += 1
    return out


def set_of(dtype: str) -> list:
    """The GEMMs measured for a storage type: Table 3's up to MAX_FLOPS (f32), or up to 4 x MAX_FLOPS (bf16: the
    tensor cores run them about ten times faster), networks interleaved."""
    return interleaved(gemm_set(MAX_FLOPS if dtype == "f32" else 4 * MAX_FLOPS))


def _candidates(text: str) -> list:
    """In a worker process: every GO candidate of a one-GEMM group, rendered."""
    import gemmc
    from gemmc.concurrent.plan import go_candidates

    group = gemmc.compile_string(text)["t"]
    member = group.members[0]
    rendered = [gemmc.CompiledKernel(ir, member.target, member.filename).rendered
                for _, ir in go_candidates(member.ir, group.group_plan.choices[0], member.target)]
    return [(r, r.entry) for r in rendered]


def _compile(item) -> None:
    from gemmc.runtime.compile import device_function

    device_function(*item)


def precompile(texts: list[str]) -> None:
    """Plan the GEMMs in parallel processes, then NVRTC-compile each distinct candidate once (disk caches)."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    t0 = time.time()
    with ProcessPoolExecutor(16, mp_context=get_context("spawn")) as pool:
        unique = {(r.source, e): (r, e) for found in pool.map(_candidates, texts, chunksize=2) for r, e in found}
        list(pool.map(_compile, unique.values(), chunksize=4))
    harness.log(f"compiled {len(unique)} candidate kernels in {time.time() - t0:.0f} s")


def measure(out: Path, budget: float, limit: int | None, compile_only: bool = False, dtype: str = "f32") -> None:
    import cupy as cp

    import gemmc
    from gemmc.runtime.concurrent import go_tune
    from gemmc.runtime.device import device_name

    gemms = set_of(dtype)[:limit]
    texts = [schedule(g, dtype=dtype) for g in gemms]
    precompile(texts)
    if compile_only:
        return
    rows: list[dict] = []
    stream = cp.cuda.Stream(non_blocking=True)
    start = time.time()
    path = harness.results_path(out, "concurrent_train", device_name(), time.strftime("%Y-%m-%d"),
                                "" if dtype == "f32" else dtype)
    path.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:  # after every GEMM: a run cut short keeps what it measured
        path.write_text(json.dumps({"gpu": device_name(), "dtype": dtype, "max_flops": MAX_FLOPS,
                                    "feature_names": FEATURE_NAMES, "seconds": time.time() - start, "rows": rows},
                                   indent=1))

    for g, text in harness.progress(list(zip(gemms, texts, strict=True)), "concurrent_train"):
        if time.time() - start > budget:
            harness.log(f"budget of {budget:.0f} s reached after {len(rows)} GEMMs")
            break
        group = gemmc.compile_string(text)["t"]
        a_shape = (g.m, g.k) if g.layout_a == "row" else (g.k, g.m)
        b_shape = (g.k, g.n) if g.layout_b == "row" else (g.n, g.k)
        # one A and one B: go_tune gives each of a degree's copies its own (runtime/concurrent.py, own_operands)
        if dtype == "bf16":  # CuPy has no bfloat16: torch's tensors, which gemmc takes as well
            import torch

            A = torch.randn(a_shape, device="cuda", dtype=torch.bfloat16)
            B = torch.randn(b_shape, device="cuda", dtype=torch.bfloat16)
        else:
            A = cp.random.standard_normal(a_shape, dtype=cp.float32)
            B = cp.random.standard_normal(b_shape, dtype=cp.float32)
        As, Bs = [A.T if g.layout_a == "col" else A], [B.T if g.layout_b == "col" else B]
        try:
            with stream:
                tuning, _ = go_tune(group.group_run, 0, As, Bs, stream)
        except Exception as err:  # noqa: BLE001 - one GEMM's failure is recorded, the rest still measured
            harness.log(f"{g.app} {g.label()}: FAILED {type(err).__name__}: {err}")
            rows.append({"app": g.app, "name": g.name, "gemm": g.label(), "error": f"{type(err).__name__}: {err}"})
            save()
            continue
        choice = group.group_plan.choices[0]
        row = {"app": g.app, "name": g.name, "gemm": g.label(), "m": g.m, "n": g.n, "k": g.k,
               "layout_a": g.layout_a, "layout_b": g.layout_b, "features": list(choice.features),
               "t_alone_us": tuning.t_alone * 1e6,
               "speedup": {str(d): tuning.speedup(d) for d in DEGREES},
               "go_kernel": {str(d): tuning.labels[tuning.chosen[d]] for d in DEGREES},
               "alone_us": {str(s): [t * 1e6 if t is not None else None for t in ts] for s, ts in tuning.alone.items()},
               "labels": list(tuning.labels), "partitions": tuning.partitions}
        rows.append(row)
        save()
        harness.log(f"{g.app:12s} {g.label():22s} {row['t_alone_us']:9.1f} us  "
                    + "  ".join(f"{d}P {row['speedup'][str(d)]:.2f}" for d in DEGREES[1:]))
    save()
    print(f"wrote {path} ({len(rows)} GEMMs)")


def label(speedups: dict[str, float]) -> int:
    """Index into DEGREES: the degree of the largest speedup, or 1S where none reaches MIN_GAIN."""
    best = max(DEGREES, key=lambda d: speedups[str(d)])
    return DEGREES.index(best) if speedups[str(best)] >= MIN_GAIN else 0


def acceptable(speedups: dict[str, float], up_to: int = max(DEGREES)) -> list[int]:
    """The degrees up to `up_to` whose speedup comes within CLOSE of the oracle's (the best one's, or sequential's
    1.0 where none reaches MIN_GAIN): the right answers for a group of `up_to` GEMMs."""
    s = {d: speedups[str(d)] for d in DEGREES if d <= up_to}
    best = max(s.values())
    oracle = best if best >= MIN_GAIN else s[1]
    return [d for d in s if s[d] >= CLOSE * oracle]


def targets(right: list[list[int]]) -> np.ndarray:
    """Equal weights on each row's right answers (its `acceptable` degrees): rows x DEGREES."""
    return np.array([[float(d in r) for d in DEGREES] for r in right])


def evaluate(model: predictor.Predictor | dict[str, predictor.Predictor], rows: list[dict]) -> dict:
    """Accuracy, the share of GEMMs whose predicted degree runs within 5% of the best degree's speedup (the oracle,
    which is 1 where nothing beats sequential by MIN_GAIN), the predicted degree's speedup over the oracle's
    (geometric mean and worst: the share within 5% saturates where a constant degree scores 98-100%), and the share
    within 5% of each constant degree, overall and with the group's size D clamping all (paper 004 §4.7 reports
    accuracy per D)."""
    report: dict = {}
    for D in (16, 2, 4, 8):
        hits = close = 0
        ratios = []
        always = dict.fromkeys(DEGREES, 0)
        for r in rows:
            s = {d: r["speedup"][str(d)] for d in DEGREES if d <= D}
            best = max(s, key=s.__getitem__)
            best = best if s[best] >= MIN_GAIN else 1
            right = acceptable(r["speedup"], D)
            m = model[r["app"]] if isinstance(model, dict) else model
            pred = max(d for d in DEGREES if d <= min(m.predict(r["features"]), D))
            hits += pred == best
            close += pred in right
            ratios.append(s[pred] / s[best])
            for d in DEGREES:
                always[d] += max(e for e in DEGREES if e <= min(d, D)) in right
        report[f"D={D}"] = {"accuracy": hits / len(rows), "within_5pct_of_oracle": close / len(rows),
                            "geomean_speedup_vs_oracle": geometric_mean(ratios),
                            "worst_speedup_vs_oracle": min(ratios),
                            "constant_degree_within_5pct": {str(d): n / len(rows) for d, n in always.items()}}
    return report


def storage(data: dict) -> str:
    """The predictor key of a measured file: "" for f32 (older files name no dtype), "half" for bf16/f16."""
    return predictor.storage_key(data.get("dtype", "f32") in ("bf16", "f16"))


def trained(rows: list[dict], gpu: str) -> predictor.Predictor:
    X = np.array([r["features"] for r in rows])
    W, b, lo, hi = predictor.fit(X, targets([acceptable(r["speedup"]) for r in rows]))
    return predictor.Predictor(gpu=gpu, arch="sm_90", features=tuple(FEATURE_NAMES), x_min=tuple(lo),
                               x_max=tuple(hi), weights=tuple(map(tuple, W)), bias=tuple(b))


def fit(path: Path, write: bool) -> None:
    data = json.loads(path.read_text())
    rows = [r for r in data["rows"] if "error" not in r]
    train = [r for r in rows if r["app"] not in HELD_OUT]
    test = [r for r in rows if r["app"] in HELD_OUT]
    X = np.array([r["features"] for r in train])
    y = np.array([label(r["speedup"]) for r in train])
    W, b, lo, hi = predictor.fit(X, targets([acceptable(r["speedup"]) for r in train]))
    arch = "sm_90"
    model = predictor.Predictor(gpu=data["gpu"], arch=arch, features=tuple(FEATURE_NAMES), x_min=tuple(lo),
                                x_max=tuple(hi), weights=tuple(map(tuple, W)), bias=tuple(b))
    counts = {f"{d}{'S' if d == 1 else 'P'}": int((y == i).sum()) for i, d in enumerate(DEGREES)}
    apps = sorted({r["app"] for r in rows})
    # leave one network out: each network predicted by a model trained on all the others
    loo = {app: trained([r for r in rows if r["app"] != app], data["gpu"]) for app in apps}
    result = {"train": evaluate(model, train), "held_out": evaluate(model, test) if test else {},
              "leave_one_network_out": evaluate(loo, rows),
              "train_gemms": len(train), "held_out_gemms": len(test), "held_out_networks": list(HELD_OUT),
              "train_labels": counts}
    print(json.dumps(result, indent=1))
    if write:
        out = predictor.model_path(arch, storage(data))
        payload = {"gpu": data["gpu"], "arch": arch, "dtype": data.get("dtype", "f32"),
                   "features": list(FEATURE_NAMES), "x_min": lo.tolist(),
                   "x_max": hi.tolist(), "weights": W.tolist(), "bias": b.tolist(), "classes": list(DEGREES),
                   "trained_from": path.name, "min_gain": MIN_GAIN, "evaluation": result,
                   "rows": [{"gemm": r["gemm"], "app": r["app"], "features": r["features"],
                             "label": DEGREES[label(r["speedup"])], "acceptable": acceptable(r["speedup"]),
                             "predicted": model.predict(r["features"])}
                            for r in train]}
        out.write_text(json.dumps(payload, indent=1) + "\n")
        print(f"wrote {out}")


def main(argv: list[str] | None = None) -> None:
    p = harness.parser("concurrent_train", __doc__, results=False)
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("measure", help="GPU: the GEMM set's speedups at every degree")
    m.add_argument("--out", default=str(harness.RESULTS), help="results folder (default: %(default)s)")
    m.add_argument("--budget", type=float, default=150.0, help="seconds of measuring, compiles aside")
    m.add_argument("--limit", type=int)
    m.add_argument("--compile-only", action="store_true", help="only fill the compile caches")
    m.add_argument("--dtype", choices=("f32", "bf16"), default="f32", help="the GEMMs' storage type")
    f = sub.add_parser("fit", help="train and evaluate the predictor on a measured file")
    f.add_argument("data")
    f.add_argument("--write", action="store_true", help="store the model in gemmc/concurrent/data/")
    args = p.parse_args(argv)
    if args.command == "measure":
        measure(Path(args.out), args.budget, args.limit, args.compile_only, args.dtype)
    else:
        fit(Path(args.data), args.write)


if __name__ == "__main__":
    main()
