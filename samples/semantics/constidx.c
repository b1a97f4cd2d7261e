/* Sixteen input-chosen reads of an 8 KiB stack table holding i mod 256, each checked against the
   value it must hold (the shape of KLEE's constant-array optimisation test), then one read that
   decides the outcome. */
#include <stdio.h>
#include <unistd.h>
#define N 8192
#define NIDX 16
int main(void) {
    unsigned char a[N];
    unsigned short k[NIDX];
    if (read(0, k, sizeof k) != (ssize_t)sizeof k) return 2;
    for (unsigned i = 0; i < N; i++) a[i] = (unsigned char)(i % 256);
    int bad = 0;
    for (int j = 0; j < NIDX; j++)
        if (a[k[j] % N] != k[j] % 256) bad++;
    if (bad) { puts("broken"); return 1; }
    if (a[k[0] % N] < 128) { puts("low"); return 0; }
    puts("high");
    return 0;
}
