/* a 64 KiB constant table (.rodata) read at a 16-bit symbolic index and at a second index derived from it */
#include <stdio.h>
#include <unistd.h>
#define V(i) (unsigned char)(((i) * 2654435761u) >> 24)
#define R4(i) V(i), V((i) + 1), V((i) + 2), V((i) + 3)
#define R16(i) R4(i), R4((i) + 4), R4((i) + 8), R4((i) + 12)
#define R256(i) R16(i), R16((i) + 16), R16((i) + 32), R16((i) + 48), R16((i) + 64), R16((i) + 80), \
    R16((i) + 96), R16((i) + 112), R16((i) + 128), R16((i) + 144), R16((i) + 160), R16((i) + 176), \
    R16((i) + 192), R16((i) + 208), R16((i) + 224), R16((i) + 240)
#define R4K(i) R256(i), R256((i) + 256), R256((i) + 512), R256((i) + 768), R256((i) + 1024), \
    R256((i) + 1280), R256((i) + 1536), R256((i) + 1792), R256((i) + 2048), R256((i) + 2304), \
    R256((i) + 2560), R256((i) + 2816), R256((i) + 3072), R256((i) + 3328), R256((i) + 3584), R256((i) + 3840)
#define R64K R4K(0), R4K(4096), R4K(8192), R4K(12288), R4K(16384), R4K(20480), R4K(24576), R4K(28672), \
    R4K(32768), R4K(36864), R4K(40960), R4K(45056), R4K(49152), R4K(53248), R4K(57344), R4K(61440)
static const unsigned char t[65536] = {R64K};
int main(void) {
    unsigned char in[2] = {0, 0};
    if (read(0, in, 2) != 2) return 2;
    unsigned k = in[0] | (unsigned)in[1] << 8;
    unsigned v = t[k], w = t[k ^ 0x8000];
    if (v == 0 && w == 255) { puts("edge"); return 3; }
    if (v > w) { puts("down"); return 1; }
    if (v == w) { puts("flat"); return 2; }
    puts("up");
    return 0;
}
