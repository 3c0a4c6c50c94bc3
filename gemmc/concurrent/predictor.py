"""The concurrency predictor (paper 004 §4.3): multinomial logistic regression over min-max normalised features,
classes 1S/2P/4P/8P/16P. Inference is one matrix-vector product and a softmax; training is full-batch gradient
descent on the cross-entropy with an L2 penalty (numpy only, deterministic), against one class per row or a
distribution over the classes.

The trained model is a data file per target architecture (gemmc/concurrent/data/predictor_<arch>.json) written
by gemmc/bench/concurrent_train.py from measurements on the GPU; it records its training rows and, for each, the class
the script's own evaluation gave, so a test can check inference against the training script.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from gemmc.ir.group import DEGREES

DATA = Path(__file__).parent / "data"


@dataclass(frozen=True)
class Predictor:
    gpu: str
    arch: str
    features: tuple[str, ...]
    x_min: tuple[float, ...]
    x_max: tuple[float, ...]
    weights: tuple[tuple[float, ...], ...]  # one row per feature, one column per class
    bias: tuple[float, ...]
    classes: tuple[int, ...] = DEGREES
    source: str = ""  # the data file

    def scores(self, x: tuple[float, ...] | np.ndarray) -> np.ndarray:
        lo, hi = np.asarray(self.x_min), np.asarray(self.x_max)
        z = (np.asarray(x, dtype=np.float64) - lo) / np.where(hi > lo, hi - lo, 1.0)
        return z @ np.asarray(self.weights) + np.asarray(self.bias)

    def probabilities(self, x: tuple[float, ...] | np.ndarray) -> np.ndarray:
        s = self.scores(x)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def predict(self, x: tuple[float, ...] | np.ndarray) -> int:
        """The degree of the most probable class (ties: the smaller degree)."""
        return self.classes[int(np.argmax(self.scores(x)))]


def normalise(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lo, hi = X.min(axis=0), X.max(axis=0)
    return (X - lo) / np.where(hi > lo, hi - lo, 1.0), lo, hi


def fit(X: np.ndarray, y: np.ndarray, *, l2: float = 1e-3, steps: int = 4000, rate: float = 0.5
        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Softmax regression on rows X (n x f): (W f x c, b c, x_min, x_max). y: a class index per row, or a target
    distribution over the classes per row (n x c; e.g. equal weights on every class that is a right answer)."""
    Z, lo, hi = normalise(np.asarray(X, dtype=np.float64))
    n, f = Z.shape
    y = np.asarray(y)
    classes = len(DEGREES)
    onehot = np.eye(classes)[y.astype(np.int64)] if y.ndim == 1 else y / y.sum(axis=1, keepdims=True)
    W, b = np.zeros((f, classes)), np.zeros(classes)
    for _ in range(steps):
        s = Z @ W + b
        p = np.exp(s - s.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        g = (p - onehot) / n
        W -= rate * (Z.T @ g + l2 * W)
        b -= rate * g.sum(axis=0)
    return W, b, lo, hi


def from_dict(data: dict, source: str = "") -> Predictor:
    return Predictor(gpu=data["gpu"], arch=data["arch"], features=tuple(data["features"]),
                     x_min=tuple(data["x_min"]), x_max=tuple(data["x_max"]),
                     weights=tuple(tuple(r) for r in data["weights"]), bias=tuple(data["bias"]),
                     classes=tuple(data["classes"]), source=source)


STORAGE = ("", "half")  # the models' keys: f32/f64 storage (CUDA-core and tensor-core f32 kernels), bf16/f16 storage


def storage_key(half: bool) -> str:
    """The key of the model for a GEMM of half (bf16/f16) storage or not. The two run different kernel families
    (f32: SIMT and its kin; half: hopper's persistent TMA + wgmma loop), whose concurrency behaves differently, so
    each is trained from its own measurements (paper 004 trains once per GPU and kernel library)."""
    return "half" if half else ""


def model_path(arch: str, key: str = "") -> Path:
    return DATA / (f"predictor_{arch}_{key}.json" if key else f"predictor_{arch}.json")


@cache
def load(arch: str, key: str = "") -> Predictor | None:
    """The trained model for a target architecture and storage key, or None where none was trained."""
    path = model_path(arch, key)
    if not path.exists():
        return None
    return from_dict(json.loads(path.read_text()), source=f"gemmc/concurrent/data/{path.name}")
