/* Array of pointers (address-aware caching paper, Fig. 1) reached by eight allocation histories:
 * three symbolic branches may each allocate a scratch object first, so every path places the
 * matrix differently. Then array[i][j] is compared with two markers.
 * stdin: byte z (low 3 bits pick the scratch objects), byte i | j << 4. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#define N 8
#define MAGIC 0x5a
int main(void) {
    unsigned char in[2] = {0, 0};
    if (read(0, in, 2) != 2) return 2;
    char *scratch[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++)
        if (in[0] & (1 << k)) {
            scratch[k] = malloc(16 + 8 * k);
            scratch[k][0] = (char)k;
        }
    char **array = calloc(N, sizeof(char *));
    for (unsigned r = 0; r < N; r++) array[r] = calloc(N, 1);
    array[0][1] = MAGIC;
    array[3][5] = MAGIC + 1;
    unsigned i = in[1] & 0x0f, j = in[1] >> 4;
    if (i >= N || j >= N) return 1;
    char v = array[i][j];
    if (v == MAGIC) { puts("magic"); return 3; }
    if (v == MAGIC + 1) return 5;
    return scratch[1] ? 4 + scratch[1][0] : 0;
}
