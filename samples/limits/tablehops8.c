/* Eight dependent lookups idx = (idx + table[idx]) & 2047 into a 4 KiB constant table, the first
 * index folded from four input bytes (xor of the two halves), as CRC/S-box/dispatch code does. */
#include <unistd.h>
#define E(i) ((unsigned short)((((i) * 2246822519u) >> 13) ^ ((i) * 3266489917u >> 7)))
#define R4(i) E(i), E((i) + 1), E((i) + 2), E((i) + 3)
#define R16(i) R4(i), R4((i) + 4), R4((i) + 8), R4((i) + 12)
#define R64(i) R16(i), R16((i) + 16), R16((i) + 32), R16((i) + 48)
#define R256(i) R64(i), R64((i) + 64), R64((i) + 128), R64((i) + 192)
static const unsigned short table[2048] = {
    R256(0), R256(256), R256(512), R256(768), R256(1024), R256(1280), R256(1536), R256(1792)
};
int main(void) {
    unsigned char in[4];
    if (read(0, in, 4) != 4) return 1;
    unsigned w = in[0] | (in[1] << 8) | (in[2] << 16) | ((unsigned)in[3] << 24);
    unsigned idx = ((w >> 16) ^ w) & 2047;
    for (int k = 0; k < 8; k++) idx = (idx + table[idx]) & 2047;
    return idx < 512 ? 0 : idx < 1024 ? 1 : idx < 1536 ? 2 : 3;
}
