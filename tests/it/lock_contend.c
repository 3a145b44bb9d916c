/* The lock-contention workload of tests/it/lock.rs: `contend MODE SECONDS THREADS`.
 *   mmap:  threads map, touch and unmap anonymous memory: writers of the process's mmap_lock (rwsem:W in
 *          vm_mmap_pgoff / __vm_munmap) against the page-fault readers (rwsem:R).
 *   futex: threads take one pthread mutex around a tiny section: futex wait/wake on one hash bucket
 *          (the bucket's spinlock).
 *   pipe:  threads write a byte to one pipe and read one back: the pipe's kernel mutex (pipe_write and
 *          pipe_read hold pipe->mutex), so a waiter's lock has an owner, another thread of this process.
 *   signal: threads block and unblock a signal: sigprocmask takes the process's sighand->siglock (spinlock).
 * The two later modes have their own thread functions, so hammer's code (whose stack perf's frame-pointer
 * callchains read past libc) stays as the file tests were measured with.
 * Every thread runs until SECONDS have passed (CLOCK_MONOTONIC), so the run length does not depend on load. */
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double seconds;
static int futex_mode;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long shared;
static int pipe_fds[2];

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

static void *pipe_hammer(void *arg) {
    double end = now() + seconds;
    char c = 1;
    (void)arg;
    while (now() < end) {
        for (int i = 0; i < 64; i++) {
            if (write(pipe_fds[1], &c, 1) != 1 || read(pipe_fds[0], &c, 1) != 1) { perror("pipe"); exit(1); }
        }
    }
    return NULL;
}

static void *signal_hammer(void *arg) {
    double end = now() + seconds;
    sigset_t set;
    (void)arg;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    while (now() < end) {
        for (int i = 0; i < 64; i++) {
            pthread_sigmask(SIG_BLOCK, &set, NULL);
            pthread_sigmask(SIG_UNBLOCK, &set, NULL);
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: contend mmap|futex|pipe|signal SECONDS THREADS\n"); return 2; }
    futex_mode = strcmp(argv[1], "futex") == 0;
    seconds = atof(argv[2]);
    int n = atoi(argv[3]);
    pthread_t t[64];
    if (n < 1 || n > 64) return 2;
    void *(*run)(void *) = hammer;
    if (strcmp(argv[1], "pipe") == 0) {
        if (pipe(pipe_fds) != 0) { perror("pipe"); return 1; }
        run = pipe_hammer;
    } else if (strcmp(argv[1], "signal") == 0) {
        run = signal_hammer;
    }
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, run, NULL);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    return 0;
}
