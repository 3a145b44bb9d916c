/* The lock-contention workload of tests/it/lock.rs: `contend MODE SECONDS THREADS`.
 *   mmap:  threads map, touch and unmap anonymous memory: writers of the process's mmap_lock (rwsem:W in
 *          vm_mmap_pgoff / __vm_munmap) against the page-fault readers (rwsem:R).
 *   futex: threads take one pthread mutex around a tiny section: futex wait/wake on one hash bucket
 *          (the bucket's spinlock).
 * Every thread runs until SECONDS have passed (CLOCK_MONOTONIC), so the run length does not depend on load. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double seconds;
static int futex_mode;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long shared;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *hammer(void *arg) {
    double end = now() + seconds;
    (void)arg;
    while (now() < end) {
        for (int i = 0; i < 64; i++) {
            if (futex_mode) {
                pthread_mutex_lock(&mutex);
                shared++;
                pthread_mutex_unlock(&mutex);
            } else {
                char *p = mmap(NULL, 16384, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (p == MAP_FAILED) { perror("mmap"); exit(1); }
                p[0] = 1;
                p[8192] = 1;
                munmap(p, 16384);
            }
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: contend mmap|futex SECONDS THREADS\n"); return 2; }
    futex_mode = strcmp(argv[1], "futex") == 0;
    seconds = atof(argv[2]);
    int n = atoi(argv[3]);
    pthread_t t[64];
    if (n < 1 || n > 64) return 2;
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, hammer, NULL);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    return 0;
}
