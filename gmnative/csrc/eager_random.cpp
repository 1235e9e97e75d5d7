
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

// outputs [0, count) of the generator at s, each handed to put(j, output) by one thread. A
// step waits for the previous one's 128-bit multiply: each thread runs four lanes (four parts
// of its range, each from its own jumped-to state) so that four multiplies are in flight.
template <typename Put> static void gm_pcg_outputs(gm_u128 s, gm_u128 inc, long long count, int nt, Put put) {
    #pragma omp parallel num_threads(nt) if(count >= (1LL << 14))
    {
        const long long t = omp_get_thread_num(), nth = omp_get_num_threads();
        const long long lo = count * t / nth, hi = count * (t + 1) / nth, len = (hi - lo) / 4;
        const long long a0 = lo, a1 = lo + len, a2 = lo + 2 * len, a3 = lo + 3 * len;  // lane 3 takes the rest
        gm_u128 x0 = gm_pcg_advance(s, (gm_u128)a0, inc), x1 = gm_pcg_advance(s, (gm_u128)a1, inc);
        gm_u128 x2 = gm_pcg_advance(s, (gm_u128)a2, inc), x3 = gm_pcg_advance(s, (gm_u128)a3, inc);
        for (long long i = 0; i < len; ++i) {
            x0 = x0 * GM_PCG_MULT + inc;
            x1 = x1 * GM_PCG_MULT + inc;
            x2 = x2 * GM_PCG_MULT + inc;
            x3 = x3 * GM_PCG_MULT + inc;
            put(a0 + i, gm_pcg_output(x0));
            put(a1 + i, gm_pcg_output(x1));
            put(a2 + i, gm_pcg_output(x2));
            put(a3 + i, gm_pcg_output(x3));
        }
        for (long long j = a3 + len; j < hi; ++j) {
            x3 = x3 * GM_PCG_MULT + inc;
            put(j, gm_pcg_output(x3));
        }
    }
}

extern "C" void gm_eager_uniform_f32(void* const* a, int nt) {
    float* out = (float*)a[0];
    gm_u64* p = (gm_u64*)a[1];
    const gm_u128 s = ((gm_u128)p[0] << 64) | p[1], inc = ((gm_u128)p[2] << 64) | p[3];
    const long long n = (long long)p[6];
    const float scale = 1.0f / 16777216.0f;
    long long first = 0;
    if (n > 0 && p[4]) {  // the high half NumPy kept from its last output
        out[0] = (float)((unsigned)p[5] >> 8) * scale;
        p[4] = 0;
        first = 1;
    }
    const long long m = n - first, count = (m + 1) / 2;
    float* o = out + first;
    gm_pcg_outputs(s, inc, count, nt, [=](long long j, gm_u64 v) {
        o[2 * j] = (float)((unsigned)v >> 8) * scale;
        if (2 * j + 1 < m) o[2 * j + 1] = (float)((unsigned)(v >> 32) >> 8) * scale;
    });
    if (count > 0) {
        const gm_u128 end = gm_pcg_advance(s, (gm_u128)count, inc);
        p[0] = (gm_u64)(end >> 64);
        p[1] = (gm_u64)end;
        p[4] = (gm_u64)(m & 1);
        p[5] = gm_pcg_output(end) >> 32;
    }
}

extern "C" void gm_eager_uniform_f64(void* const* a, int nt) {
    double* out = (double*)a[0];
    gm_u64* p = (gm_u64*)a[1];
    const gm_u128 s = ((gm_u128)p[0] << 64) | p[1], inc = ((gm_u128)p[2] << 64) | p[3];
    const long long n = (long long)p[6];
    gm_pcg_outputs(s, inc, n, nt, [=](long long j, gm_u64 v) { out[j] = (double)(v >> 11) * (1.0 / 9007199254740992.0); });
    const gm_u128 end = gm_pcg_advance(s, (gm_u128)n, inc);
    p[0] = (gm_u64)(end >> 64);
    p[1] = (gm_u64)end;
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
template <typename T> static inline void gm_dropout_put(const T* x, T* y, T* m, long long i, bool keep, T scale,
                                                        bool want) {
    const T s = keep ? scale : (T)0;
    y[i] = x[i] * s;
    if (want) m[i] = s;
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
    gm_pcg_outputs(s, inc, count, nt, [=](long long j, gm_u64 v) {
        gm_dropout_put(xo, yo, mo, 2 * j, ((unsigned)v >> 8) >= thr, scale, want);
        if (2 * j + 1 < m) gm_dropout_put(xo, yo, mo, 2 * j + 1, ((unsigned)(v >> 32) >> 8) >= thr, scale, want);
    });
    if (count > 0) {
        const gm_u128 end = gm_pcg_advance(s, (gm_u128)count, inc);
        p[0] = (gm_u64)(end >> 64);
        p[1] = (gm_u64)end;
        p[4] = (gm_u64)(m & 1);
        p[5] = gm_pcg_output(end) >> 32;
    }
}

extern "C" void gm_eager_uniform_dropout_f64(void* const* a, int nt) {
    const double* x = (const double*)a[0];
    double* y = (double*)a[1];
    double* mk = (double*)a[2];
    gm_u64* p = (gm_u64*)a[3];
    const double scale = ((const double*)a[4])[0];
    const gm_u128 s = ((gm_u128)p[0] << 64) | p[1], inc = ((gm_u128)p[2] << 64) | p[3];
    const long long n = (long long)p[6];
    const gm_u64 thr = p[7];
    const bool want = p[8] != 0;
    gm_pcg_outputs(s, inc, n, nt, [=](long long j, gm_u64 v) { gm_dropout_put(x, y, mk, j, (v >> 11) >= thr, scale, want); });
    const gm_u128 end = gm_pcg_advance(s, (gm_u128)n, inc);
    p[0] = (gm_u64)(end >> 64);
    p[1] = (gm_u64)end;
}
