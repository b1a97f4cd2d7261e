/* Dependent lookups idx = (idx + table[idx]) & 2047 into a 4 KiB constant table, HOPS times, from
 * an 11-bit index folded (xor) from W input bytes: the same work whatever the input width. */
#include <unistd.h>
#ifndef HOPS
#define HOPS 3
#endif
#ifndef W
#define W 4
#endif
#define E(i) ((unsigned short)((((i) * 2246822519u) >> 9) ^ ((i) * 52711u)))
#define R4(i) E(i), E((i) + 1), E((i) + 2), E((i) + 3)
#define R16(i) R4(i), R4((i) + 4), R4((i) + 8), R4((i) + 12)
#define R64(i) R16(i), R16((i) + 16), R16((i) + 32), R16((i) + 48)
#define R256(i) R64(i), R64((i) + 64), R64((i) + 128), R64((i) + 192)
static const unsigned short table[2048] = {
    R256(0), R256(256), R256(512), R256(768), R256(1024), R256(1280), R256(1536), R256(1792)
};
int main(void) {
    unsigned char in[W];
    if (read(0, in, W) != W) return 1;
    unsigned v = 0;
    for (int k = 0; k < W; k++) v ^= (unsigned)in[k] << (8 * (k % 2));
    unsigned idx = v & 2047;
    for (int k = 0; k < HOPS; k++) idx = (idx + table[idx]) & 2047;
    return idx == 0 ? 0 : idx < 16 ? 1 : idx < 1024 ? 2 : 3;
}
