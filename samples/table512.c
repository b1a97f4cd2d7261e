/* A 4 KiB table of 512 longs read at a symbolic index, then branches on the value
 * (stdin: 2 bytes, index = byte0 | (byte1 & 1) << 8). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#define ENTRIES 512
int main(void) {
    unsigned char in[2] = {0, 0};
    if (read(0, in, 2) != 2) return 2;
    long *t = malloc(ENTRIES * sizeof(long));
    for (unsigned k = 0; k < ENTRIES; k++) t[k] = (long)((k * 2654435761u) % 1000u);
    unsigned idx = in[0] | ((in[1] & 1u) << 8);
    long v = t[idx];
    if (v < 100) return 1;
    if (v > 900) { puts("high"); return 4; }
    if (v % 7 == 0) return 3;
    return 0;
}
