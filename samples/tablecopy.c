/* A 2 KiB constant table copied into malloc(2048) (gcc -O0 inlines the memcpy as first/last qword
 * moves, an aligned destination (dst + 8) & ~7 and rep movsq), then read at an input index. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static const unsigned char table[2048] = {[0] = 1, [5] = 7, [100] = 3, [2047] = 9};
int main(void) {
    unsigned char in[2];
    if (read(0, in, 2) != 2) return 1;
    unsigned char *buf = malloc(2048);
    memcpy(buf, table, 2048);
    unsigned idx = (in[0] | (in[1] << 8)) & 2047;
    int v = buf[idx];
    if (v == 7) return 7;
    if (v == 9) return 9;
    return v > 0 ? 2 : 0;
}
