// Row routines shared by eager's small native units (eager_index.cpp, eager_softmax.cpp), put
// before each unit's own text by its loader (gmnative._units.LazyUnit). Why one place: the
// gradient of softmax and of log_softmax over rows was written three times, and its bits must
// be one thing (cross_entropy's backward and log_softmax's are the same gradient).
//
// Every array is (n, c) row-major; d = [n, c]. Row sums accumulate in double.
typedef long long gm_i64;

// the gradient of softmax, gx = y * (g - sum(g * y)), or (Log) of log_softmax,
// gx = g - exp(y) * sum(g), where y is the forward's output; one pass per row (a row is read
// once into cache and written once)
template <bool Log, typename T> static void softmax_rows_backward(const T* g, const T* y, T* gx, const gm_i64* d) {
    const gm_i64 n = d[0], c = d[1];
    for (gm_i64 i = 0; i < n; ++i) {
        const T* gi = g + i * c;
        const T* yi = y + i * c;
        T* oi = gx + i * c;
        double s = 0.0;
        #pragma omp simd reduction(+:s)
        for (gm_i64 j = 0; j < c; ++j)
            s += Log ? (double)gi[j] : (double)(gi[j] * yi[j]);
        const T st = (T)s;
        #pragma omp simd
        for (gm_i64 j = 0; j < c; ++j)
            oi[j] = Log ? gi[j] - (T)exp(yi[j]) * st : yi[j] * (gi[j] - st);
    }
}
