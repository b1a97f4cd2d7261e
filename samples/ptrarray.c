/* Array of pointers (address-aware caching paper, Fig. 1): a symbolic branch allocates extra
 * objects first, then array[i][j] == MAGIC with symbolic i, j (stdin: byte z, byte i | j << 4). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#define N 8
#define MAGIC 0x5a
int main(void) {
    unsigned char in[2] = {0, 0};
    if (read(0, in, 2) != 2) return 2;
    void *extra[4] = {0};
    if (in[0] > 100) for (int k = 0; k < 4; k++) extra[k] = malloc(24);
    char **array = calloc(N, sizeof(char *));
    for (unsigned i = 0; i < N; i++) array[i] = calloc(N, 1);
    array[0][1] = MAGIC;
    unsigned i = in[1] & 0x0f, j = in[1] >> 4;
    if (i >= N || j >= N) return 1;
    if (array[i][j] == MAGIC) { puts("magic"); return 3; }
    return extra[0] ? 4 : 0;
}
