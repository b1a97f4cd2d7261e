/* Reads bytes of a malloc'd block that only its first byte was written to, at indices from the
 * input: natively the block comes from fresh heap pages and its other bytes read 0; with
 * uninitialized memory taken as any content, a byte may hold anything (exit codes 50..53). */
#include <stdlib.h>
#include <unistd.h>
int main(void) {
    unsigned char in[4];
    if (read(0, in, 4) != 4) return 100;
    unsigned char *p = malloc(64);
    if (!p) return 101;
    p[0] = 7;
    int hits = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char v = p[in[i] & 63];
        if (v == 7) hits++;
        else if (v != 0) return 50 + i;
    }
    return hits;
}
