/* Two [i][j] lookups into an N x N matrix of calloc'd rows, each index a 4-byte little-endian
 * unsigned read from stdin (16 bytes in all); a few cells are set, the exit code sums what the two
 * lookups found (out-of-range indices exit early). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifndef N
#define N 20
#endif
int main(void) {
    unsigned idx[4];
    if (read(0, idx, sizeof idx) != sizeof idx) return 100;
    int **m = malloc(N * sizeof(int *));
    for (unsigned r = 0; r < N; r++) m[r] = calloc(N, sizeof(int));
    m[0][0] = 1; m[3][7] = 2; m[N - 1][N - 1] = 4;
    int sum = 0;
    for (int t = 0; t < 2; t++) {
        unsigned i = idx[2 * t], j = idx[2 * t + 1];
        if (i >= N || j >= N) return 50 + t;
        sum = sum * 8 + m[i][j];
    }
    return sum;
}
