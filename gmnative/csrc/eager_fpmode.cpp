// The floating-point mode of the threads the kernels run on: torch.set_flush_denormal's switch.
// Flush-to-zero (a subnormal result is written as 0) and denormals-are-zero (a subnormal operand
// is read as 0) are bits of each thread's MXCSR register, so they are set in the calling thread
// and in every OpenMP worker of a team of `threads` (libgomp keeps those workers from call to
// call). Why anyone asks: a model trained long on small gradients fills its gradients and
// momentum buffers with subnormal numbers, and x86 cores take a slow path on each of them (W6's
// eager step, one batch trained 900 times: 17,000 of its 20,586 momentum values subnormal, and
// 6.3 against 4.8 ms a step).
#include <omp.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define GM_FPMODE_BITS 0x8040u  // flush-to-zero (bit 15) and denormals-are-zero (bit 6)
static void gm_fpmode_set(int on) {
    const unsigned csr = _mm_getcsr();
    _mm_setcsr(on ? (csr | GM_FPMODE_BITS) : (csr & ~GM_FPMODE_BITS));
}
#endif

// 1 where the mode was set (x86), 0 where this build cannot set it
extern "C" int gm_eager_fpmode_flush_denormal(int on, int threads) {
#if defined(__x86_64__) || defined(__i386__)
    gm_fpmode_set(on);
    #pragma omp parallel num_threads(threads > 0 ? threads : 1)
    gm_fpmode_set(on);
    return 1;
#else
    (void)on;
    (void)threads;
    return 0;
#endif
}

// whether the calling thread flushes denormals now (1), not (0), or cannot say (-1)
extern "C" int gm_eager_fpmode_flushing() {
#if defined(__x86_64__) || defined(__i386__)
    return (_mm_getcsr() & GM_FPMODE_BITS) == GM_FPMODE_BITS ? 1 : 0;
#else
    return -1;
#endif
}
