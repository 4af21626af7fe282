#!/usr/bin/env python3
"""k-means in PyTorch on the same GPU, same data and same rules as
gpu/jobs/kmeans (generated dataset from glibc rand_r with seed = object index,
initial centres = first k objects, ties to the lowest index, empty clusters
keep their centre, float64).  Times 10 loops (CUDA events, median of 3 after
a warm-up) and compares the centres with those the C benchmark wrote.

    python3 tests/gpu/kmeans_torch.py [--centres FILE] [--mb 256]
"""
import argparse
import statistics
import sys

import torch

M32 = 0xFFFFFFFF


def rand_r_step(seed):
    """glibc rand_r on an int64 tensor of seeds: (value, new seed)."""
    nxt = (seed * 1103515245 + 12345) & M32
    res = (nxt // 65536) % 2048
    nxt = (nxt * 1103515245 + 12345) & M32
    res = (res << 10) ^ ((nxt // 65536) % 1024)
    nxt = (nxt * 1103515245 + 12345) & M32
    res = (res << 10) ^ ((nxt // 65536) % 1024)
    return res, nxt


def lab_dataset(n, coords, dev):
    seed = torch.arange(n, dtype=torch.int64, device=dev)
    cols = []
    for _ in range(coords):
        r, seed = rand_r_step(seed)
        cols.append((r.to(torch.float64) / 2147483647.0) * 10.0)
    return torch.stack(cols, dim=1).contiguous()


def kmeans(X, k, loops, threshold):
    n = X.shape[0]
    C = X[:k].clone()
    member = torch.full((n,), -1, dtype=torch.int64, device=X.device)
    deltas = []
    for _ in range(loops):
        d = ((X[:, None, :] - C[None, :, :]) ** 2).sum(dim=2)
        m = d.argmin(dim=1)                      # first minimum: lowest index on ties
        deltas.append((m != member).sum())
        member = m
        sums = torch.zeros_like(C).index_add_(0, m, X)
        cnt = torch.bincount(m, minlength=k).to(X.dtype)[:, None]
        C = torch.where(cnt > 0, sums / cnt.clamp(min=1), C)
    return C, member, torch.stack(deltas).to(torch.float64) / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--centres")
    ap.add_argument("--mb", type=int, default=256)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch: no CUDA device")
        return 1
    dev = torch.device("cuda")
    coords, k, loops, thr = 2, 16, 10, 0.001
    n = a.mb * 1024 * 1024 // (coords * 8)
    X = lab_dataset(n, coords, dev)
    # Spot-check the generator against a scalar rand_r.
    for i in (0, 1, 12345, n - 1):
        s = i
        for j in range(coords):
            r, s = rand_r_step(torch.tensor(s))
            assert X[i, j].item() == (r.item() / 2147483647.0) * 10.0
            s = s.item()
    times = []
    for rep in range(4):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        C, member, deltas = kmeans(X, k, loops, thr)
        e1.record()
        torch.cuda.synchronize()
        if rep:
            times.append(e0.elapsed_time(e1))
    ms = statistics.median(times)
    dl = deltas.tolist()
    conv = next((i + 1 for i, d in enumerate(dl) if d <= thr), loops)
    print(f"torch {torch.__version__}: {loops} loops in {ms:.3f} ms ({ms / loops:.3f} ms/loop), "
          f"n={n}, deltas={['%.4g' % d for d in dl]}, would stop after loop {conv}")
    if a.centres:
        with open(a.centres) as f:
            head = f.readline().split()
            ours = torch.tensor([float(x) for x in f.read().split()], dtype=torch.float64)
        our_loops = int(head[0])
        if our_loops != loops:
            C, _, _ = kmeans(X, k, our_loops, thr)
        rel = ((C.flatten().cpu() - ours).abs() / ours.abs()).max().item()
        print(f"torch vs gpu/jobs/kmeans centres after {our_loops} loops: max relative difference {rel:.3g}")
    print(f"TORCH_MS {ms:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
