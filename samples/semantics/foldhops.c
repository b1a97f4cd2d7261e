/* Three dependent lookups into a 4 KiB global table of ints, the first index folded from four
   input bytes (shifted and xored, as a hash of a key would be), each next index from the value
   found; the outcome is the range of the last value. */
#include <stdio.h>
#include <unistd.h>
#define E(i) ((unsigned)(((i) * 2246822519u) >> 7 ^ ((i) * 374761393u)))
#define R4(i) E(i), E((i) + 1), E((i) + 2), E((i) + 3)
#define R16(i) R4(i), R4((i) + 4), R4((i) + 8), R4((i) + 12)
#define R64(i) R16(i), R16((i) + 16), R16((i) + 32), R16((i) + 48)
#define R256(i) R64(i), R64((i) + 64), R64((i) + 128), R64((i) + 192)
static const unsigned table[1024] = {R256(0), R256(256), R256(512), R256(768)};
int main(void) {
    unsigned char in[4];
    if (read(0, in, 4) != 4) return 9;
    unsigned idx = (in[0] ^ (unsigned)in[1] << 3 ^ (unsigned)in[2] << 5 ^ (unsigned)in[3] << 7) & 1023;
    for (int h = 0; h < 3; h++) idx = (table[idx] ^ idx) & 1023;
    unsigned v = table[idx];
    if (v < 0x10000000u) { puts("low"); return 1; }
    if (v > 0xf0000000u) { puts("high"); return 2; }
    puts("mid");
    return 0;
}
