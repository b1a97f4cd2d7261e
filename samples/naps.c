/* Sleeping the way programs do: nanosleep again while interrupted (as gnulib's xnanosleep), a
 * request the kernel rejects (EINVAL), clock_nanosleep returning its error, sleep and usleep.
 * Each input byte picks a request: '1' one microsecond, 'x' tv_nsec = 10^9, 'n' negative. */
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static struct timespec request(int c) {
    struct timespec ts = {0, 1000};
    if (c == 'x') ts.tv_nsec = 1000000000L;
    else if (c == 'n') ts.tv_sec = -1;
    return ts;
}

int main(void) {
    unsigned char in[2] = {0, 0};
    if (read(0, in, 2) != 2) return 9;
    struct timespec ts = request(in[0]);
    int r;
    while ((r = nanosleep(&ts, &ts)) == -1 && errno == EINTR)
        continue;
    printf("nanosleep %d %s\n", r, r ? (errno == EINVAL ? "EINVAL" : "other") : "slept");
    struct timespec t2 = request(in[1]);
    int e = clock_nanosleep(CLOCK_MONOTONIC, 0, &t2, NULL);
    printf("clock_nanosleep %s\n", e == 0 ? "slept" : e == EINVAL ? "EINVAL" : "other");
    if (sleep(0) != 0 || usleep(1) != 0) return 3;
    return r == 0 && e == 0 ? 0 : 1;
}
