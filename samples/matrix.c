/* N x N matrix of calloc'd rows; one cell set; read at symbolic [i][j] (stdin bytes i, j). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#ifndef N
#define N 40
#endif
int main(void) {
    unsigned char in[2] = {0, 0};
    if (read(0, in, 2) != 2) return 2;
    unsigned i = in[0], j = in[1];
    int **m = malloc(N * sizeof(int *));
    for (unsigned r = 0; r < N; r++) m[r] = calloc(N, sizeof(int));
    m[0][0] = 120;
    if (i >= N || j >= N) return 1;
    if (m[i][j] > 0) { puts("positive"); return 3; }
    puts("zero");
    return 0;
}
