/* zlib's crc32 (Debian's libz.a) over two input bytes. */
#include <unistd.h>
#include <zlib.h>
int main(void) {
    unsigned char in[2];
    if (read(0, in, 2) != 2) return 1;
    unsigned long c = crc32(0L, in, 2);
    if ((c & 0xff) == 0x5a) return 2;
    if ((c >> 28) == 0) return 3;
    return (c & 1) ? 4 : 5;
}
