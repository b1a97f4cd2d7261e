/* HOPS dependent lookups idx = (idx + table[idx]) & 2047 into a 4 KiB constant table (the shape of
 * S-boxes, CRC tables and dispatch tables), starting from two input bytes. */
#include <unistd.h>
#ifndef HOPS
#define HOPS 3
#endif
#define E(i) ((unsigned short)((((i) * 2654435761u) >> 11) ^ ((i) * 40503u)))
#define R4(i) E(i), E((i) + 1), E((i) + 2), E((i) + 3)
#define R16(i) R4(i), R4((i) + 4), R4((i) + 8), R4((i) + 12)
#define R64(i) R16(i), R16((i) + 16), R16((i) + 32), R16((i) + 48)
#define R256(i) R64(i), R64((i) + 64), R64((i) + 128), R64((i) + 192)
static const unsigned short table[2048] = {
    R256(0), R256(256), R256(512), R256(768), R256(1024), R256(1280), R256(1536), R256(1792)
};
int main(void) {
    unsigned char in[2];
    if (read(0, in, 2) != 2) return 1;
    unsigned idx = (in[0] | (in[1] << 8)) & 2047;
    for (int k = 0; k < HOPS; k++) idx = (idx + table[idx]) & 2047;
    return idx == 0 ? 0 : idx < 16 ? 1 : idx < 1024 ? 2 : 3;
}
