/* Two lookups in an N x N calloc'd matrix: m[i][j] and m[j][i] (stdin bytes i, j). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#ifndef N
#define N 10
#endif
int main(void) {
    unsigned char in[2] = {0, 0};
    if (read(0, in, 2) != 2) return 2;
    unsigned i = in[0], j = in[1];
    int **m = calloc(N, sizeof(int *));
    for (unsigned r = 0; r < N; r++) m[r] = calloc(N, sizeof(int));
    m[0][1] = 5;
    m[2][3] = 9;
    if (i >= N || j >= N) return 1;
    int a = m[i][j];
    int b = m[j][i];
    if (a > 0 && b > 0) return 5;
    if (a > 0) { printf("a=%d\n", a); return 3; }
    if (b > 0) { printf("b=%d\n", b); return 4; }
    return 0;
}
