
#include <omp.h>
typedef unsigned __int128 gm_u128;
typedef unsigned long long gm_u64;
static const gm_u128 GM_PCG_MULT = ((gm_u128)0x2360ED051FC65DA4ULL << 64) | 0x4385DF649FCCF645ULL;

static inline gm_u64 gm_pcg_output(gm_u128 s) {
    const gm_u64 x = (gm_u64)(s >> 64) ^ (gm_u64)s;
    const unsigned rot = (unsigned)(s >> 122);
    return (x >> rot) | (x << ((64u - rot) & 63u));
}

// the state `delta` steps after s
static gm_u128 gm_pcg_advance(gm_u128 s, gm_u128 delta, gm_u128 inc) {
    gm_u128 acc_mult = 1, acc_plus = 0, cur_mult = GM_PCG_MULT, cur_plus = inc;
    while (delta > 0) {
        if (delta & 1) {
            acc_mult *= cur_mult;
            acc_plus = acc_plus * cur_mult + cur_plus;
        }
        cur_plus = (cur_mult + 1) * cur_plus;
        cur_mult *= cur_mult;
        delta >>= 1;
    }
    return acc_mult * s + acc_plus;
}

// Dropout in one pass (eager's F.dropout: gmnative/dropout_kernels.py): the uniform draws the
// gm_eager_uniform kernels make, each compared with an integer threshold instead of stored,
// and y = x * s, s = keep ? scale : 0, written with s itself when the backward needs it (its
// gradient is g * s). keep is exactly `rand(...) >= p` of the same draw: a float32 draw is
// k 2^-24 (k the 24 high bits of a 32-bit half), so it is >= p (compared in float32) when k >=
// ceil(float32(p) 2^24); a float64 draw is k 2^-53 (k = output >> 11), >= p when k >=
// ceil(p 2^53). Same stream, same generator state afterwards, same masks: the compiled step's
// replayed masks and checkpoint's recomputation still agree with eager's. p = [state hi,
// state lo, inc hi, inc lo, has_uint32, uinteger, n, threshold, write s], updated in place;
// a[4] holds scale in the data's type.
//
// Outputs [0, count) of the generator at s are made a block at a time into a buffer
// (gm_pcg_blocks: each thread's range in blocks of GM_PCG_BLOCK outputs), and what is made of
// them (the uniform numbers, dropout's comparison and products) then runs over the block as
// vector code: written per output inside the generator's loop it was scalar, and cost as much
// as the draws (a dropout of 65536 floats: 180 us, now 93 with 87 for the draws alone before).
// A step waits for the previous one's 128-bit multiply: a block is four lanes (four parts of
// it, each from its own jumped-to state) so that four multiplies are in flight. Output j is
// the same number whichever thread and lane computes it: the results and the final state are
// NumPy's.
#define GM_PCG_BLOCK 4096
template <typename Block> static void gm_pcg_blocks(gm_u128 s, gm_u128 inc, long long count, int nt, Block block) {
    #pragma omp parallel num_threads(nt) if(count >= (1LL << 14))
    {
        gm_u64 buf[GM_PCG_BLOCK];
        const long long t = omp_get_thread_num(), nth = omp_get_num_threads();
        const long long lo = count * t / nth, hi = count * (t + 1) / nth;
        for (long long b0 = lo; b0 < hi; b0 += GM_PCG_BLOCK) {
            const long long b1 = b0 + GM_PCG_BLOCK < hi ? b0 + GM_PCG_BLOCK : hi, len = (b1 - b0) / 4;
            gm_u128 x0 = gm_pcg_advance(s, (gm_u128)b0, inc), x1 = gm_pcg_advance(s, (gm_u128)(b0 + len), inc);
            gm_u128 x2 = gm_pcg_advance(s, (gm_u128)(b0 + 2 * len), inc);
            gm_u128 x3 = gm_pcg_advance(s, (gm_u128)(b0 + 3 * len), inc);
            for (long long i = 0; i < len; ++i) {
                x0 = x0 * GM_PCG_MULT + inc;
                x1 = x1 * GM_PCG_MULT + inc;
                x2 = x2 * GM_PCG_MULT + inc;
                x3 = x3 * GM_PCG_MULT + inc;
                buf[i] = gm_pcg_output(x0);
                buf[len + i] = gm_pcg_output(x1);
                buf[2 * len + i] = gm_pcg_output(x2);
                buf[3 * len + i] = gm_pcg_output(x3);
            }
            for (long long j = 4 * len; j < b1 - b0; ++j) {
                x3 = x3 * GM_PCG_MULT + inc;
                buf[j] = gm_pcg_output(x3);
            }
            block(b0, b1, (const gm_u64*)buf);
        }
    }
}

template <typename T> static inline void gm_dropout_put(const T* x, T* y, T* m, long long i, bool keep, T scale,
                                                        bool want) {
    const T s = keep ? scale : (T)0;
    y[i] = x[i] * s;
    if (want) m[i] = s;
}

// one block's products: s = (k >= thr) * scale, k the draw's high bits (k = u >> 8 of a 32-bit
// half for float32, u >> 11 of an output for float64, below 2^53: compared signed, which AVX2
// has); m = s where the backward needs it (m not null). A function of its own with restrict
// pointers, not inlined: inside the generator's loop the products stayed scalar (gcc 12), at the
// cost of the draws themselves
__attribute__((noinline)) static void gm_dropout_block(const float* __restrict x, float* __restrict y, float* __restrict m,
                             const unsigned* __restrict u, unsigned thr, float scale, long long n) {
    if (m) {
        #pragma omp simd
        for (long long i = 0; i < n; ++i) {
            const float f = (u[i] >> 8) >= thr ? scale : 0.0f;
            y[i] = x[i] * f;
            m[i] = f;
        }
    } else {
        #pragma omp simd
        for (long long i = 0; i < n; ++i) y[i] = x[i] * ((u[i] >> 8) >= thr ? scale : 0.0f);
    }
}

__attribute__((noinline)) static void gm_dropout_block(const double* __restrict x, double* __restrict y, double* __restrict m,
                             const gm_u64* __restrict v, long long thr, double scale, long long n) {
    if (m) {
        #pragma omp simd
        for (long long i = 0; i < n; ++i) {
            const double f = (long long)(v[i] >> 11) >= thr ? scale : 0.0;
            y[i] = x[i] * f;
            m[i] = f;
        }
    } else {
        #pragma omp simd
        for (long long i = 0; i < n; ++i) y[i] = x[i] * ((long long)(v[i] >> 11) >= thr ? scale : 0.0);
    }
}

// the uniform draws' conversion of one block of outputs (a function of its own with restrict
// pointers, as gm_dropout_block, so that it runs as vector code): float32 takes each 32-bit
// half (low, then high: the buffer read as halves), k >> 8 times 2^-24; float64 each output,
// k >> 11 times 2^-53
__attribute__((noinline)) static void gm_uniform_block(float* __restrict out, const unsigned* __restrict u,
                                                       long long n) {
    #pragma omp simd
    for (long long i = 0; i < n; ++i) out[i] = (float)(u[i] >> 8) * (1.0f / 16777216.0f);
}

__attribute__((noinline)) static void gm_uniform_block(double* __restrict out, const gm_u64* __restrict v,
                                                       long long n) {
    #pragma omp simd
    for (long long i = 0; i < n; ++i) out[i] = (double)(long long)(v[i] >> 11) * (1.0 / 9007199254740992.0);
}

// the generator's state after a fill written back to p (NumPy's PCG64 state layout: p[0..1]
// the state, p[4..5] the kept high half of a float32 fill's last output): `odd` 1 when a
// float32 fill used only the low half of its last output (kept for the next draw), 0 when it
// used both, -1 for a float64 fill (the kept half left as it is)
static inline void gm_pcg_store(gm_u64* p, gm_u128 end, long long odd) {
    p[0] = (gm_u64)(end >> 64);
    p[1] = (gm_u64)end;
    if (odd >= 0) {
        p[4] = (gm_u64)odd;
        p[5] = gm_pcg_output(end) >> 32;
    }
}

extern "C" void gm_eager_uniform_f32(void* const* a, int nt) {
    float* out = (float*)a[0];
    gm_u64* p = (gm_u64*)a[1];
    const gm_u128 s = ((gm_u128)p[0] << 64) | p[1], inc = ((gm_u128)p[2] << 64) | p[3];
    const long long n = (long long)p[6];
    long long first = 0;
    if (n > 0 && p[4]) {  // the high half NumPy kept from its last output
        out[0] = (float)((unsigned)p[5] >> 8) * (1.0f / 16777216.0f);
        p[4] = 0;
        first = 1;
    }
    const long long m = n - first, count = (m + 1) / 2;
    float* o = out + first;
    gm_pcg_blocks(s, inc, count, nt, [=](long long j0, long long j1, const gm_u64* v) {
        const long long e0 = 2 * j0, e1 = 2 * j1 < m ? 2 * j1 : m;
        gm_uniform_block(o + e0, (const unsigned*)v, e1 - e0);
    });
    if (count > 0) gm_pcg_store(p, gm_pcg_advance(s, (gm_u128)count, inc), m & 1);
}

extern "C" void gm_eager_uniform_f64(void* const* a, int nt) {
    double* out = (double*)a[0];
    gm_u64* p = (gm_u64*)a[1];
    const gm_u128 s = ((gm_u128)p[0] << 64) | p[1], inc = ((gm_u128)p[2] << 64) | p[3];
    const long long n = (long long)p[6];
    gm_pcg_blocks(s, inc, n, nt, [=](long long j0, long long j1, const gm_u64* v) {
        gm_uniform_block(out + j0, v, j1 - j0);
    });
    gm_pcg_store(p, gm_pcg_advance(s, (gm_u128)n, inc), -1);
}

extern "C" void gm_eager_uniform_dropout_f32(void* const* a, int nt) {
    const float* x = (const float*)a[0];
    float* y = (float*)a[1];
    float* mk = (float*)a[2];
    gm_u64* p = (gm_u64*)a[3];
    const float scale = ((const float*)a[4])[0];
    const gm_u128 s = ((gm_u128)p[0] << 64) | p[1], inc = ((gm_u128)p[2] << 64) | p[3];
    const long long n = (long long)p[6];
    const unsigned thr = (unsigned)p[7];
    const bool want = p[8] != 0;
    long long first = 0;
    if (n > 0 && p[4]) {  // the high half NumPy kept from its last output
        gm_dropout_put(x, y, mk, 0, ((unsigned)p[5] >> 8) >= thr, scale, want);
        p[4] = 0;
        first = 1;
    }
    const long long m = n - first, count = (m + 1) / 2;
    const float* xo = x + first;
    float* yo = y + first;
    float* mo = want ? mk + first : mk;
    gm_pcg_blocks(s, inc, count, nt, [=](long long j0, long long j1, const gm_u64* v) {
        // output j's low half is element 2j, its high half 2j + 1: the buffer read as 32-bit
        // halves (little-endian) is the elements in order
        const unsigned* u = (const unsigned*)v;
        const long long e0 = 2 * j0, e1 = 2 * j1 < m ? 2 * j1 : m;
        gm_dropout_block(xo + e0, yo + e0, want ? mo + e0 : nullptr, u, thr, scale, e1 - e0);
    });
    if (count > 0) gm_pcg_store(p, gm_pcg_advance(s, (gm_u128)count, inc), m & 1);
}

extern "C" void gm_eager_uniform_dropout_f64(void* const* a, int nt) {
    const double* x = (const double*)a[0];
    double* y = (double*)a[1];
    double* mk = (double*)a[2];
    gm_u64* p = (gm_u64*)a[3];
    const double scale = ((const double*)a[4])[0];
    const gm_u128 s = ((gm_u128)p[0] << 64) | p[1], inc = ((gm_u128)p[2] << 64) | p[3];
    const long long n = (long long)p[6];
    const long long thr = (long long)p[7];  // below 2^53 + 1: a signed comparison (AVX2 has no unsigned one)
    const bool want = p[8] != 0;
    gm_pcg_blocks(s, inc, n, nt, [=](long long j0, long long j1, const gm_u64* v) {
        gm_dropout_block(x + j0, y + j0, want ? mk + j0 : nullptr, v, thr, scale, j1 - j0);
    });
    gm_pcg_store(p, gm_pcg_advance(s, (gm_u128)n, inc), -1);
}
