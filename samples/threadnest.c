/* Threads that start threads: main starts an outer thread, which starts an inner one and joins
 * it; main joins the outer one. Each id must be its own, and each join gives its own thread's
 * value. Two input bytes: the outer thread's and the inner thread's. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_t inner_id;

static void *inner(void *arg) {
    unsigned char c = *(unsigned char *)arg;
    return (void *)(long)(c == 'b' ? 20 : 2);
}

static void *outer(void *arg) {
    unsigned char *in = arg;
    void *got = 0;
    if (pthread_create(&inner_id, 0, inner, in + 1) != 0) return (void *)-1L;
    if (pthread_join(inner_id, &got) != 0) return (void *)-2L;
    return (void *)((long)got + (in[0] == 'a' ? 100 : 1));
}

int main(void) {
    unsigned char in[2] = {0, 0};
    if (read(0, in, 2) != 2) return 9;
    pthread_t outer_id;
    void *got = 0;
    if (pthread_create(&outer_id, 0, outer, in) != 0) return 8;
    if (pthread_join(outer_id, &got) != 0) return 7;
    if (pthread_equal(outer_id, inner_id)) { puts("same id"); return 6; }
    long v = (long)got;
    if (v == 120) puts("both");
    else if (v == 102) puts("outer");
    else if (v == 21) puts("inner");
    else if (v == 3) puts("neither");
    else { printf("%ld\n", v); return 5; }
    return 0;
}
