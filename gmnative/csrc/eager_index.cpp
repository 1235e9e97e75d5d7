// eager's index and loss kernels (gmnative/index_kernels.py): the forward and the log-softmax
// gradient of cross_entropy over 2-d logits, the row gradient of x[idx] (rows of g added into
// the rows they were read from, negative indices counted from the end), and NumPy's bounded
// integer draws (Generator.integers) run on the Generator's own bit generator. The log-softmax
// gradient is eager_rows.h's (put before this text).
//
// Why one small unit of its own: these run on small arrays (a (32, 27) batch of logits, 96
// rows of an embedding) where NumPy's per-call cost is the whole cost: cross_entropy's
// forward was a dozen NumPy calls (about 14 us) and is one call here. No threads: the arrays
// are small and the callers run on one core's worth of work. The unit is compiled after
// gmnative.c_helpers.host_prelude (no system header): its exp and log overloads compute a float
// in float and, where libmvec is there, vectorize the loops below.
typedef long long gm_i64;
typedef unsigned long long gm_u64;
typedef unsigned int gm_u32;

// x, logp: (n, c) row-major; t: (n) targets; loss: (n + 1), -logp[i, t_i] per row (0 where
// t_i == ignore_index) and their sum last (accumulated in double);
// d = [n, c, ignore_index, first row whose target is out of range or -1 (out), rows kept (out)].
// logp is (x - m) - log(sum(exp(x - m))), PyTorch's order, m the row's maximum, or 0 for a row
// of -inf (the op's where(m > -inf, m, 0)): a row of -inf, or holding +inf or nan, is nan
// throughout, as PyTorch's log_softmax (the nan reaches the row's sum).
template <typename T> static void ce_forward(const T* x, const gm_i64* t, T* logp, T* loss, gm_i64* d) {
    const gm_i64 n = d[0], c = d[1], ignore = d[2];
    gm_i64 bad = -1, kept = 0;
    double total = 0.0;
    for (gm_i64 i = 0; i < n; ++i) {
        const T* xi = x + i * c;
        T* li = logp + i * c;
        T m = xi[0];
        #pragma omp simd reduction(max:m)
        for (gm_i64 j = 1; j < c; ++j)
            m = xi[j] > m ? xi[j] : m;
        if (m == -__builtin_inf())
            m = (T)0;
        double s = 0.0;
        #pragma omp simd reduction(+:s)
        for (gm_i64 j = 0; j < c; ++j)
            s += (double)exp((T)(xi[j] - m));
        const T lse = (T)log((T)s);
        #pragma omp simd
        for (gm_i64 j = 0; j < c; ++j)
            li[j] = (T)(xi[j] - m) - lse;
        const gm_i64 ti = t[i];
        if (ti == ignore) {
            loss[i] = (T)0;
        } else if (ti < 0 || ti >= c) {
            if (bad < 0)
                bad = i;
            loss[i] = (T)0;
        } else {
            loss[i] = -li[ti];
            total += (double)loss[i];
            ++kept;
        }
    }
    loss[n] = (T)total;
    d[3] = bad;
    d[4] = kept;
}

// out (rows_out, width) = 0 (or out as given, d[4] = 0), then row i of g added into row
// idx[i] (idx[i] + rows_out when negative), in order (NumPy's add.at adds in the same order,
// so the sums are its bits); d = [rows, width, rows_out, first position out of range or -1
// (out), zero out first]. Nothing is written once an index is out of range (the caller raises).
template <typename T> static void rows_add(const T* g, const gm_i64* idx, T* out, gm_i64* d) {
    const gm_i64 rows = d[0], width = d[1], nw = d[2];
    d[3] = -1;
    for (gm_i64 i = 0; i < rows; ++i) {
        const gm_i64 r = idx[i];
        if (r < -nw || r >= nw) {
            d[3] = i;
            return;
        }
    }
    if (d[4])
        for (gm_i64 k = 0; k < nw * width; ++k)
            out[k] = (T)0;
    for (gm_i64 i = 0; i < rows; ++i) {
        const gm_i64 r = idx[i] < 0 ? idx[i] + nw : idx[i];
        T* o = out + r * width;
        const T* gi = g + i * width;
        #pragma omp simd
        for (gm_i64 j = 0; j < width; ++j)
            o[j] = o[j] + gi[j];
    }
}

// NumPy's bitgen_t (numpy/random/bitgen.h): the bit generator's state and its functions.
struct gm_bitgen {
    void* state;
    gm_u64 (*next_uint64)(void*);
    gm_u32 (*next_uint32)(void*);
    double (*next_double)(void*);
    gm_u64 (*next_raw)(void*);
};

// Generator.integers(low, high, n) for int64 (numpy/random/src/distributions/distributions.c,
// random_bounded_uint64_fill without the masked method): rng = high - 1 - low; a range within
// 32 bits draws 32-bit numbers (Lemire's multiply with rejection), a wider one 64-bit numbers.
// p = [bitgen_t address, low, rng, n]; out: n int64. The caller holds the generator's lock.
static void bounded_int64(const gm_i64* p, gm_i64* out) {
    gm_bitgen* bg = (gm_bitgen*)(unsigned long)p[0];
    const gm_u64 off = (gm_u64)p[1], rng = (gm_u64)p[2];
    const gm_i64 n = p[3];
    if (rng == 0) {
        for (gm_i64 i = 0; i < n; ++i)
            out[i] = (gm_i64)off;
    } else if (rng <= 0xFFFFFFFFULL) {
        if (rng == 0xFFFFFFFFULL) {
            for (gm_i64 i = 0; i < n; ++i)
                out[i] = (gm_i64)(off + bg->next_uint32(bg->state));
            return;
        }
        const gm_u32 rng_excl = (gm_u32)rng + 1u;
        const gm_u32 threshold = (gm_u32)(0xFFFFFFFFUL - (gm_u32)rng) % rng_excl;
        for (gm_i64 i = 0; i < n; ++i) {
            gm_u64 m = (gm_u64)bg->next_uint32(bg->state) * rng_excl;
            gm_u32 leftover = (gm_u32)m;
            if (leftover < rng_excl) {
                while (leftover < threshold) {
                    m = (gm_u64)bg->next_uint32(bg->state) * rng_excl;
                    leftover = (gm_u32)m;
                }
            }
            out[i] = (gm_i64)(off + (m >> 32));
        }
    } else if (rng == 0xFFFFFFFFFFFFFFFFULL) {
        for (gm_i64 i = 0; i < n; ++i)
            out[i] = (gm_i64)(off + bg->next_uint64(bg->state));
    } else {
        const gm_u64 rng_excl = rng + 1;
        const gm_u64 threshold = (0xFFFFFFFFFFFFFFFFULL - rng) % rng_excl;
        for (gm_i64 i = 0; i < n; ++i) {
            unsigned __int128 m = (unsigned __int128)bg->next_uint64(bg->state) * rng_excl;
            gm_u64 leftover = (gm_u64)m;
            if (leftover < rng_excl) {
                while (leftover < threshold) {
                    m = (unsigned __int128)bg->next_uint64(bg->state) * rng_excl;
                    leftover = (gm_u64)m;
                }
            }
            out[i] = (gm_i64)(off + (gm_u64)(m >> 64));
        }
    }
}

#define GM_INDEX_KERNELS(T, suffix) \
    extern "C" void gm_eager_ce_forward_##suffix(void* const* a, int) { \
        ce_forward<T>((const T*)a[0], (const gm_i64*)a[1], (T*)a[2], (T*)a[3], (gm_i64*)a[4]); } \
    extern "C" void gm_eager_log_softmax_backward_##suffix(void* const* a, int) { \
        softmax_rows_backward<true, T>((const T*)a[0], (const T*)a[1], (T*)a[2], (const gm_i64*)a[3]); } \
    extern "C" void gm_eager_rows_add_##suffix(void* const* a, int) { \
        rows_add<T>((const T*)a[0], (const gm_i64*)a[1], (T*)a[2], (gm_i64*)a[3]); }

GM_INDEX_KERNELS(float, f32)
GM_INDEX_KERNELS(double, f64)

extern "C" void gm_eager_bounded_int64(void* const* a, int) {
    bounded_int64((const gm_i64*)a[0], (gm_i64*)a[1]);
}
