// gk_prim.cuh — the sort / scan / select primitives of the CUDA backend:
// CUB on the GPU (temporary storage grown in the executor, so no allocation
// in steady state), the standard library in emulation.  Every function
// returns 0, GA_ECUDA or GA_ENOMEM and runs on the executor's stream.
#pragma once

#include "gpu/cuda/gk.cuh"

// out[0..n] = exclusive prefix sums of in[0..n] (n + 1 items: pass in[n] = 0
// to get the total in out[n]).
int gk_scan_u64(gk_exec *x, const uint64_t *in, uint64_t *out, size_t n1);
// Indices i in [0, n) with flags[i] != 0, ascending, into out; the count
// into *d_count (device memory).
int gk_select_idx(gk_exec *x, const uint8_t *flags, uint32_t *out, uint32_t *d_count, size_t n);
// Stable sort of (key, value) pairs by key bits [0, end_bit).  Sorted into
// k_out / v_out; k_in / v_in are only read (CUB's pointer overload: "the
// contents of the input data are not altered"; its double buffer lives in
// the temporary storage), which the feed relies on: it sorts classify's
// slot_of and 0, 1, ... in place and reads both again on disordered batches.
int gk_sort_u64(gk_exec *x, const uint64_t *k_in, uint64_t *k_out, const uint32_t *v_in, uint32_t *v_out,
                size_t n, int end_bit);
int gk_sort_u32(gk_exec *x, const uint32_t *k_in, uint32_t *k_out, const uint32_t *v_in, uint32_t *v_out,
                size_t n, int end_bit);
// Sort each segment [off[i], off[i+1]) of in ascending, into out.
int gk_segsort_f64(gk_exec *x, const double *in, double *out, size_t nitems,
                   const uint64_t *off, size_t nseg);
// The same for the segments [off[idx[i]], off[idx[i] + 1]), i < nseg, only
// (in and out untouched elsewhere).  Both: ascending by value, values that
// compare equal (-0.0 and +0.0) in their input order: CUB's StableSortKeys
// (the same code as its SortKeys, documented stable; its radix passes rank
// -0.0 as +0.0) or std::stable_sort (no NaN here: the feed rejects
// non-finite values).
int gk_segsort_f64_idx(gk_exec *x, const double *in, double *out, size_t nitems,
                       const uint64_t *off, const uint32_t *idx, size_t nseg);
// Parts p < nparts by length off[p + 1] - off[p]: the indices of those
// longer than small_max into big (ascending), and counts[0] = how many,
// counts[1] = parts of 1..small_max (device memory, 8-aligned: one 8-byte
// read brings both).  nparts < 2^32.
int gk_parts_split(gk_exec *x, const uint64_t *off, size_t nparts, uint64_t small_max,
                   uint32_t *big, uint32_t *counts);
