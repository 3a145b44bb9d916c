/* bport's built-in profiling workload: a known call chain main -> chain_a -> chain_b -> chain_c with a busy leaf.
 *
 * Built twice by build.rs, once with frame pointers and once without, statically linked so it runs unchanged
 * inside the verify initramfs. Every call is followed by more work in the caller, so no call becomes a tail call
 * (a tail call would drop a frame and make the "full chain" check meaningless).
 *
 * Usage: chain [MILLISECONDS]   (default 1000): busy for that much wall time, then exit 0.
 */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

#ifdef CHAIN_LEAF_FRAME
/* GCC 12 at -O2 gives a leaf that needs no stack no frame, even with -fno-omit-frame-pointer
 * -mno-omit-leaf-frame-pointer; then the kernel's frame-pointer walk from chain_c skips chain_b. Taking the
 * frame's address forces the push/mov of a normal frame. Only the frame-pointer build defines this. */
static void *volatile frame_sink;
#define KEEP_FRAME() (frame_sink = __builtin_frame_address(0))
#else
#define KEEP_FRAME() ((void)0)
#endif

__attribute__((noinline)) unsigned long chain_c(unsigned long n)
{
    unsigned long x = n;
    for (unsigned long i = 0; i < 200000; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
    KEEP_FRAME();
    return x;
}

__attribute__((noinline)) unsigned long chain_b(unsigned long n)
{
    unsigned long r = chain_c(n + 1);
    sink = r;
    return r ^ n;
}

__attribute__((noinline)) unsigned long chain_a(unsigned long n)
{
    unsigned long r = chain_b(n + 2);
    sink = r;
    return r + n;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    double ms = argc > 1 ? atof(argv[1]) : 1000.0;
    double end = now_ms() + ms;
    unsigned long acc = 0, n = 0;
    while (now_ms() < end)
        acc += chain_a(n++);
    sink = acc;
    return 0;
}
