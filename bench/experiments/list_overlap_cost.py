"""Host time of the list form's byte check (`memory.check_views`, which `validate=True` adds: no C sharing a byte with
another C or an input), GPU machine only: for 64 and 512 problems of torch tensors (M, N, K in 8..640, 8 sets cycled,
windows of 40 calls, median of 9), the checks and problem table with it (`table`) and without it (`table_unchecked`,
a call's default), and the byte check alone on the finished table (`check_views`). Results:
bench/results/dynamic/2026-11-27_h100_list-overlap-cost.json.

    OUT=... python3 bench/experiments/list_overlap_cost.py
"""

from __future__ import annotations

import json
import os

import torch
from list_sets import host_us, random_lists

import gemmc
from gemmc.runtime import dynamic_list as dl
from gemmc.runtime import memory


def main() -> None:
    k = next(iter(gemmc.compile_string("kernel varlen { alpha runtime beta runtime grouped list problems 512 }")))
    ex = k.executable
    res = {"gpu": torch.cuda.get_device_name(), "problems": {}}
    for problems in (64, 512):
        sets = random_lists(problems)
        k(*sets[0], alpha=1.0, beta=0.0)
        torch.cuda.synchronize()
        tables = [dl.problem_table(ex, *s, 0) for s in sets]
        fields = dl._consts(ex).views
        row = {"table": host_us(lambda i, s=sets: dl.problem_table(ex, *s[i % 8], 0, exact=True)),
               "check_views": host_us(lambda i, t=tables, f=fields: memory.check_views(t[i % 8], f)),
               "table_unchecked": host_us(lambda i, s=sets: dl.problem_table(ex, *s[i % 8], 0))}
        res["problems"][problems] = row
        print(problems, row, flush=True)
    with open(os.environ.get("OUT", "/tmp") + "/list_overlap_cost.json", "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
