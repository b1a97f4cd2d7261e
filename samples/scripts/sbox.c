/* Input bytes substituted through a 256-byte table (a cipher's S-box), each result chained into the
 * next index, then compared with a stored answer. */
#include <stdio.h>
#include <unistd.h>

static unsigned char sbox[256];

static void init(void) {
    unsigned int x = 1;
    for (int i = 0; i < 256; i++) {
        sbox[i] = (unsigned char)i;
    }
    for (int i = 255; i > 0; i--) {
        x = x * 1103515245u + 12345u;
        int j = (int)((x >> 16) % (unsigned)(i + 1));
        unsigned char t = sbox[i];
        sbox[i] = sbox[j];
        sbox[j] = t;
    }
}

int main(void) {
    unsigned char in[6], out[6];
    static const unsigned char want[6] = {0x2c, 0x91, 0x07, 0xe8, 0x5a, 0x33};
    init();
    if (read(0, in, 6) != 6)
        return 2;
    unsigned char prev = 0;
    for (int i = 0; i < 6; i++) {
        out[i] = sbox[(unsigned char)(in[i] ^ prev)];
        prev = out[i];
    }
    for (int i = 0; i < 6; i++)
        if (out[i] != want[i]) {
            puts("wrong");
            return 1;
        }
    puts("right");
    return 0;
}
