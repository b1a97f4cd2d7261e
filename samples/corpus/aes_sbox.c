/* Two dependent AES S-box lookups (SubBytes of FIPS-197) on two input bytes. */
#include <unistd.h>
static const unsigned char sbox[256] = {
#include "aes_sbox.inc"
};
int main(void) {
    unsigned char in[2];
    if (read(0, in, 2) != 2) return 1;
    unsigned char a = sbox[in[0] ^ in[1]];
    unsigned char b = sbox[a ^ in[0]];
    if (b == 0x63) return 2;                /* a == in[0] */
    if (a == b) return 3;
    return b < 0x80 ? 4 : 5;
}
