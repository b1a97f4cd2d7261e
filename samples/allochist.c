/* Allocation histories before a multi-object symbolic read (shape of the address-aware caching
 * paper's Figure 1), written independently of ptrpaths.  Stdin: byte c (bits 0..2 choose the
 * scratch allocations), byte ij (row in low nibble, column in high nibble).
 * VARIANT 0: scratch objects of different sizes; 1: of equal sizes; 2: scratch freed before the
 * matrix; 3: histories that differ after the matrix is built. */
#include <stdlib.h>
#include <unistd.h>
#ifndef VARIANT
#define VARIANT 0
#endif
#define ROWS 4
#define COLS 4
struct scratch { int tag; char pad[12]; };
int main(void) {
    unsigned char c, ij;
    if (read(0, &c, 1) != 1 || read(0, &ij, 1) != 1) return 100;
    struct scratch *s[3] = {NULL, NULL, NULL};
    int bit;
#if VARIANT != 3
    for (bit = 0; bit < 3; bit++) {
        if ((c >> bit) & 1) {
#if VARIANT == 1
            s[bit] = malloc(sizeof(struct scratch));
#else
            s[bit] = malloc(sizeof(struct scratch) * (bit + 1));
#endif
            s[bit]->tag = bit + 1;
        }
    }
#if VARIANT == 2
    for (bit = 0; bit < 3; bit++) free(s[bit]), s[bit] = NULL;
#endif
#endif
    int **m = calloc(ROWS, sizeof(int *));
    for (int r = 0; r < ROWS; r++) {
        m[r] = calloc(COLS, sizeof(int));
        for (int k = 0; k < COLS; k++) m[r][k] = r * k - 2;
    }
#if VARIANT == 3
    for (bit = 0; bit < 3; bit++)
        if ((c >> bit) & 1) { s[bit] = malloc(24); s[bit]->tag = bit + 1; }
#endif
    unsigned i = ij & 15, j = ij >> 4;
    if (i >= ROWS || j >= COLS) return 1;
    int res;
    if (m[i][j] > 0) res = 10 + m[i][j];
    else res = 2;
    int tags = 0;
    for (bit = 0; bit < 3; bit++) if (s[bit]) tags += s[bit]->tag;
    return res + 20 * (tags > 3);
}
