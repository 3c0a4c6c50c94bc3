"""Paper 004's GEMM set, rebuilt from its Table 3 (networks, hidden sizes, batches and token counts) with the
standard layer formulas of the paper's digest (§6.4; the paper lists no shapes): forward and backward GEMMs of
Transformer layers and LSTM gates. Sizes are C (M x N) = A (M x K) B (K x N).

- Transformer layer of hidden H at T tokens: the Q/K/V and output projections T x H x H, FFN1 T x 4H x H, FFN2
  T x H x 4H; for each forward (T, Nf, Kf) the backward dX T x Kf x Nf (B transposed: `layout B col`) and dW
  Kf x Nf x T (A transposed: `layout A col`), independent of each other.
- LSTM of hidden H at batch B: the gate GEMM 4H x B x H, its backward dh H x B x 4H (A transposed) and dW
  4H x H x B (B transposed).
"""

from __future__ import annotations

from dataclasses import dataclass

# network: (kind, hidden sizes, batches or token counts), verbatim from paper 004 Table 3
TABLE3: dict[str, tuple[str, tuple[int, ...], tuple[int, ...]]] = {
    "gnmt": ("rnn", (512, 1024), (64, 128, 256, 512)),
    "ds2": ("rnn", (800,), (64, 128, 256)),
    "rnnt": ("rnn", (2048,), (64, 128, 256, 512)),
    "transformer": ("transformer", (512, 1024), (512, 1024, 2048, 4096, 3072, 8192)),
    "bert": ("transformer", (768, 1024), (2048, 3072, 4096, 8192)),
    "gpt2": ("transformer", (1280, 1600), (2048, 3072, 4096, 8192)),
    "gpt3": ("transformer", (4096, 5140), (2048, 3072, 4096, 8192)),
    "mega_bert": ("transformer", (1024, 2048, 2560), (2048, 3072, 4096, 8192)),
    "mega_gpt": ("transformer", (1920, 3072), (2048, 3072, 4096, 8192)),
    "tnlg": ("transformer", (4256,), (2048, 3072, 4096, 8192)),
}


@dataclass(frozen=True, slots=True)
class Gemm:
    app: str
    name: str  # e.g. "qkv", "ffn1.dW"
    m: int
    n: int
    k: int
    layout_a: str = "row"
    layout_b: str = "row"

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    @property
    def key(self) -> tuple[int, int, int, str, str]:
        return (self.m, self.n, self.k, self.layout_a, self.layout_b)

    def label(self) -> str:
        """The paper's M_N_K_T1T2 naming (1 = transposed)."""
        return f"{self.m}_{self.n}_{self.k}_{int(self.layout_a == 'col')}{int(self.layout_b == 'col')}"


def transformer_gemms(app: str, h: int, t: int) -> list[Gemm]:
    forward = [("qkv", t, h, h), ("ffn1", t, 4 * h, h), ("ffn2", t, h, 4 * h)]
    out = [Gemm(app, name, m, n, k) for name, m, n, k in forward]
    for name, m, n, k in forward:
        out.append(Gemm(app, f"{name}.dX", m, k, n, layout_b="col"))
        out.append(Gemm(app, f"{name}.dW", k, n, m, layout_a="col"))
    return out


def rnn_gemms(app: str, h: int, b: int) -> list[Gemm]:
    return [Gemm(app, "gates", 4 * h, b, h), Gemm(app, "gates.dh", h, b, 4 * h, layout_a="col"),
            Gemm(app, "gates.dW", 4 * h, h, b, layout_b="col")]


def gemm_set(max_flops: float | None = None) -> list[Gemm]:
    """Every distinct GEMM of Table 3's networks (the first network to produce a shape keeps it), in table order,
    optionally only those of at most `max_flops`."""
    seen: set[tuple[int, int, int, str, str]] = set()
    out: list[Gemm] = []
    for app, (kind, hidden, inputs) in TABLE3.items():
        for h in hidden:
            for x in inputs:
                for g in (transformer_gemms if kind == "transformer" else rnn_gemms)(app, h, x):
                    if g.key in seen or (max_flops is not None and g.flops > max_flops):
                        continue
                    seen.add(g.key)
                    out.append(g)
    return out


def schedule(g: Gemm, name: str = "t", member: str = "g", dtype: str = "f32") -> str:
    """A one-GEMM group for the GEMM (the training script plans and tunes each such group)."""
    return (f"group {name} {{ dtype {dtype} layout A {g.layout_a}, B {g.layout_b} "
            f"gemm {member} {g.m} x {g.n} x {g.k} }}")
