// A hand-written AVX-512 reference for issue 41's orientation rows: how fast can a layer
// norm over the *outer* axis C of x[C][R] (R contiguous) run on this machine, against the
// same layer norm over the inner axis of x[R][C]? No compiler in the way: two threads
// (OpenMP), 16-lane intrinsics, non-temporal stores, each thread taking blocks of W result
// columns through three passes (mean, variance, normalise) while the block is in cache —
// read in place ("direct") or copied into a contiguous scratch in the first pass ("packed",
// which spares later passes the conflict misses of rows a power-of-two stride apart).
// `passes` = 2 stops after the variance (read only, like log-sum-exp's two passes).
//
//   gcc -O2 -mavx512f -mfma -fopenmp bench/reference/outer_layernorm.c -o /tmp/outer_ln -lm
//   OMP_NUM_THREADS=2 /tmp/outer_ln [passes]        # docs/benchmarks.md, 2026-11-29 16:30
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define C 512
#define R 32768
#define REPS 15

static float *x, *out, *xi, *outi, g[C], b[C];
static int passes = 3;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

// Layer norm over C of x[C][R], blocks of W columns; packed: copy each block contiguously.
static void outer(int W, int packed) {
#pragma omp parallel
    {
        float *pk = aligned_alloc(64, (size_t)C * W * 4);
        float *mu = aligned_alloc(64, W * 4), *rs = aligned_alloc(64, W * 4);
#pragma omp for schedule(static)
        for (int blk = 0; blk < R / W; blk++) {
            int c0 = blk * W;
            for (int j = 0; j < W; j++) mu[j] = 0;
            for (int r = 0; r < C; r++) {
                const float *xr = x + (size_t)r * R + c0;
                float *pr = pk + (size_t)r * W;
                if (r + 8 < C)
                    for (int j = 0; j < W; j += 16)
                        _mm_prefetch((const char *)(xr + (size_t)8 * R + j), _MM_HINT_T0);
                for (int j = 0; j < W; j += 16) {
                    __m512 v = _mm512_loadu_ps(xr + j);
                    if (packed) _mm512_store_ps(pr + j, v);
                    _mm512_store_ps(mu + j, _mm512_add_ps(_mm512_load_ps(mu + j), v));
                }
            }
            const float *src = packed ? pk : x + c0;
            size_t stride = packed ? (size_t)W : (size_t)R;
            for (int j = 0; j < W; j++) mu[j] /= C, rs[j] = 0;
            for (int r = 0; passes >= 2 && r < C; r++) {
                const float *xr = src + r * stride;
                for (int j = 0; j < W; j += 16) {
                    __m512 d = _mm512_sub_ps(_mm512_loadu_ps(xr + j), _mm512_load_ps(mu + j));
                    _mm512_store_ps(rs + j, _mm512_fmadd_ps(d, d, _mm512_load_ps(rs + j)));
                }
            }
            for (int j = 0; j < W; j++) rs[j] = 1.0f / sqrtf(rs[j] / C + 1e-5f);
            for (int r = 0; passes >= 3 && r < C; r++) {
                const float *xr = src + r * stride;
                float *o = out + (size_t)r * R + c0;
                __m512 gg = _mm512_set1_ps(g[r]), bb = _mm512_set1_ps(b[r]);
                for (int j = 0; j < W; j += 16) {
                    __m512 d = _mm512_sub_ps(_mm512_loadu_ps(xr + j), _mm512_load_ps(mu + j));
                    _mm512_stream_ps(o + j, _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_load_ps(rs + j)), gg, bb));
                }
            }
        }
        free(pk), free(mu), free(rs);
    }
}

// Layer norm over C of xi[R][C]: each row's 2 KiB stays in L1 through the three passes.
static void inner(void) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < R; r++) {
        const float *xr = xi + (size_t)r * C;
        float *o = outi + (size_t)r * C;
        __m512 s = _mm512_setzero_ps();
        for (int j = 0; j < C; j += 16) s = _mm512_add_ps(s, _mm512_loadu_ps(xr + j));
        __m512 m = _mm512_set1_ps(_mm512_reduce_add_ps(s) / C);
        s = _mm512_setzero_ps();
        for (int j = 0; passes >= 2 && j < C; j += 16) {
            __m512 d = _mm512_sub_ps(_mm512_loadu_ps(xr + j), m);
            s = _mm512_fmadd_ps(d, d, s);
        }
        __m512 rr = _mm512_set1_ps(1.0f / sqrtf(_mm512_reduce_add_ps(s) / C + 1e-5f));
        for (int j = 0; passes >= 3 && j < C; j += 16) {
            __m512 d = _mm512_sub_ps(_mm512_loadu_ps(xr + j), m);
            _mm512_stream_ps(o + j, _mm512_fmadd_ps(_mm512_mul_ps(d, rr), _mm512_loadu_ps(g + j),
                                                    _mm512_loadu_ps(b + j)));
        }
    }
}

static int by_value(const void *p, const void *q) {
    double a = *(const double *)p, c = *(const double *)q;
    return (a > c) - (a < c);
}

int main(int argc, char **argv) {
    if (argc > 1) passes = atoi(argv[1]);
    size_t n = (size_t)C * R;
    x = aligned_alloc(64, n * 4), out = aligned_alloc(64, n * 4);
    xi = aligned_alloc(64, n * 4), outi = aligned_alloc(64, n * 4);
    for (size_t i = 0; i < n; i++) x[i] = xi[i] = (float)(i % 977) / 977.f, out[i] = outi[i] = 0;
    for (int i = 0; i < C; i++) g[i] = 1, b[i] = 0;
    struct { const char *name; int width, packed; } v[] = {
        {"inner (x[R][C])", 0, 0},         {"outer W=1024 direct", 1024, 0},
        {"outer W=256 direct", 256, 0},   {"outer W=256 packed", 256, 1},
        {"outer W=128 packed", 128, 1},   {"outer W=64 packed", 64, 1},
    };
    enum { V = sizeof v / sizeof v[0] };
    static double t[V][REPS];
    for (int rep = 0; rep < REPS; rep++)  // interleaved: every variant once a round
        for (int k = 0; k < V; k++) {
            double t0 = now();
            if (v[k].width) outer(v[k].width, v[k].packed); else inner();
            t[k][rep] = now() - t0;
        }
    printf("passes %d, C = %d, R = %d, %d threads, median of %d (ms)\n", passes, C, R,
           omp_get_max_threads(), REPS);
    for (int k = 0; k < V; k++) {
        qsort(t[k], REPS, sizeof(double), by_value);
        printf("%-22s %6.2f  (%.2fx inner)\n", v[k].name, t[k][REPS / 2] * 1e3,
               t[k][REPS / 2] / t[0][REPS / 2]);
    }
    return out[1] != out[1];
}
